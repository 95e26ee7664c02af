"""The one check of texts and ids handed to the library, for neardup.dedup
and neardup.Index alike: one wording for each fault."""

from __future__ import annotations

from typing import Any


def utf8(v: Any, n: int, what: str) -> bytes:
    """v, the text or id (what) of document n, in UTF-8: a str encoded,
    bytes (bytearray, memoryview) as they are once checked to be UTF-8.
    A TypeError for anything else, a ValueError for bytes that are not
    UTF-8 or a str with a lone surrogate; each names document n and what."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        try:
            b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"document {n}: the {what} has bytes that are not valid UTF-8 at byte {e.start}; "
                "decode them first (e.g. b.decode('utf-8', 'replace') or b.decode('cp1252'))"
            ) from None
        return b
    if not isinstance(v, str):
        raise TypeError(f"document {n}: the {what} is {type(v).__name__}, want str (or bytes in UTF-8)")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"document {n}: the {what} has a lone surrogate ({v[e.start]!r}) at character {e.start}, "
            "which UTF-8 cannot hold; remove it or replace it (e.g. s.encode('utf-8', 'replace').decode())"
        ) from None
