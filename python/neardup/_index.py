"""neardup.Index: the persistent index (a directory or a Redis URL) of
`neardup index` and `neardup serve`, in-process."""

from __future__ import annotations

import ctypes
import json
from array import array
from typing import Any, Iterable, NamedTuple, Optional, Sequence

from ._dedup import options_to_flags
from ._lib import Error, OptionError, StorageError, check, lib, take_string
from ._text import utf8

__all__ = ["Index", "Match", "Result"]


class Match(NamedTuple):
    """A document of the index that a text duplicates: its id, the
    estimated similarity (MinHash: fraction of equal slots; SimHash:
    fraction of equal bits) and, for SimHash, the Hamming distance (-1
    for MinHash)."""

    id: str
    similarity: float
    distance: int


class Result(NamedTuple):
    """The outcome of check_and_add for one document: whether it was added
    (it duplicates nothing), the duplicates found, best first, and the
    document's own error (a duplicate id, ...) in batches."""

    added: bool
    matches: list[Match]
    error: Optional[str] = None


def _matches(raw: list) -> list[Match]:
    return [Match(m["id"], float(m["similarity"]), int(m["distance"])) for m in raw]


def _utf8(v: Any, i: int, what: str) -> bytes:
    """Text or id v of document i in UTF-8 (utf8, dedup's check); an id
    that is not a str or bytes is taken as str(v)."""
    if what == "id" and v is not None and not isinstance(v, (str, bytes, bytearray, memoryview)):
        v = str(v)
    return utf8(v, i, what)


def _pack(items: Sequence[bytes]) -> tuple[bytes, array]:
    return b"".join(items), array("q", map(len, items))


class Index:
    """The persistent near-duplicate index at location: a directory
    (embedded, pebble) or a Redis URL (redis://HOST:PORT/DB?prefix=NAME,
    redis+cluster://...), the same index as `neardup index` and `neardup
    serve` use, shared with them.

    When there is no index at location, one is created with options, the
    flags of `neardup index create` with '_' for '-' (method, threshold,
    num_perm, ngram, unit, bands, rows, html, t2s, ...; the defaults are
    dedup's). Options given for an existing index must agree with its
    parameters (a neardup.OptionError otherwise). A location that cannot
    be opened or made, or an index already open (in this process or
    another), is a neardup.StorageError (an OSError).

    A directory index is locked by one process at a time; close() (or a
    with block) releases it.
    """

    def __init__(self, location: str, **options: Any) -> None:
        err = ctypes.c_void_p()
        self._h: Optional[int] = None
        L = lib()
        h = L.nd_index_open(str(location).encode(), json.dumps(options_to_flags(options)).encode(), ctypes.byref(err))
        if err.value:
            msg = take_string(err.value) or "neardup: unknown error"
            # The command line's usage errors (exit 2) are options; the
            # rest is the storage's (a folder, a lock, a Redis server).
            raise (OptionError if msg.startswith("usage:") else StorageError)(msg)
        self._h = check(h, err)
        self.location = str(location)

    def _handle(self) -> int:
        if self._h is None:
            raise Error("neardup: the index is closed")
        return self._h

    def _batch(self, op: int, ids: Optional[Sequence[str]], texts: Sequence[str], limit: int) -> list[dict]:
        h = self._handle()
        for name, seq in (("texts", texts), ("ids", ids)):
            if isinstance(seq, (str, bytes)):
                # A str is a sequence of one-character documents.
                raise TypeError(f"{name} is one {type(seq).__name__}: pass a list, e.g. [{name[:-1]}]")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a whole number of at least 0 (0: every match), not {limit!r}")
        tb, tl = _pack([_utf8(t, i, "text") for i, t in enumerate(texts)])
        if ids is not None:
            if len(ids) != len(texts):
                raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
            ib, il = _pack([_utf8(d, i, "id") for i, d in enumerate(ids)])
        else:
            ib, il = b"", array("q", [0]) * len(texts)
        err = ctypes.c_void_p()
        s = lib().nd_index_batch(h, op, ib, il.buffer_info()[0] if len(texts) else None, tb, tl.buffer_info()[0] if len(texts) else None, len(texts), limit, ctypes.byref(err))
        if err.value:
            raise Error(take_string(err.value))
        return json.loads(take_string(s) or "[]")

    def check_and_add(self, id: str, text: str, limit: int = 10) -> Result:
        """Look text up and add it under id when it duplicates nothing, in
        one atomic step (exact across processes sharing a Redis index).
        A document error (a duplicate id, ...) is raised as neardup.Error."""
        r = self._batch(1, [id], [text], limit)[0]
        if r.get("error"):
            raise Error(r["error"])
        return Result(r["added"], _matches(r["matches"]))

    def check_and_add_batch(self, ids: Sequence[str], texts: Sequence[str], limit: int = 10) -> list[Result]:
        """check_and_add for many documents in one call; a document that
        duplicates an earlier one of the batch is not added either. Each
        document's own error is in its Result.error."""
        return [Result(r["added"], _matches(r["matches"]), r.get("error")) for r in self._batch(1, ids, texts, limit)]

    def query(self, text: str, limit: int = 10) -> list[Match]:
        """The indexed documents that text duplicates, best first."""
        return _matches(self._batch(0, None, [text], limit)[0]["matches"])

    def add(self, id: str, text: str) -> None:
        """Add text under id without looking it up."""
        r = self._batch(2, [id], [text], 0)[0]
        if r.get("error"):
            raise Error(r["error"])

    def add_batch(self, ids: Sequence[str], texts: Sequence[str]) -> list[Result]:
        """add for many documents in one call."""
        return [Result(r["added"], [], r.get("error")) for r in self._batch(2, ids, texts, 0)]

    def remove(self, id: str) -> None:
        """Remove the document id (an unknown id is a neardup.Error)."""
        b = str(id).encode("utf-8")
        err = ctypes.c_void_p()
        check(lib().nd_index_remove(self._handle(), b, len(b), ctypes.byref(err)), err)

    def _info(self) -> dict:
        err = ctypes.c_void_p()
        s = lib().nd_index_info(self._handle(), ctypes.byref(err))
        if err.value:
            raise Error(take_string(err.value))
        return json.loads(take_string(s) or "{}")

    @property
    def params(self) -> dict:
        """The index's parameters, as `neardup index stats` shows them."""
        return self._info()["params"]

    def __len__(self) -> int:
        return int(self._info()["documents"])

    def close(self) -> None:
        """Close the index (idempotent)."""
        if self._h is not None:
            h, self._h = self._h, None
            err = ctypes.c_void_p()
            check(lib().nd_index_close(h, ctypes.byref(err)), err)

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
