"""neardup.dedup: the `neardup dedup` pipeline in-process."""

from __future__ import annotations

import ctypes
import json
import warnings
from array import array
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

from ._lib import Error, OptionError, check, lib, take_string
from ._text import utf8

__all__ = ["dedup", "DedupResult", "options_to_flags"]

_DEFAULT_BATCH = 8192


def options_to_flags(options: Mapping[str, Any]) -> list[str]:
    """The command line flags of `neardup dedup` for keyword options:
    num_perm=256 is --num-perm=256, html=True is --html, html=False is
    --html=false, a list repeats the flag, None leaves it out."""
    flags = []
    for key, value in options.items():
        if value is None:
            continue
        name = "--" + key.replace("_", "-")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, bool):
                flags.append(name if v else name + "=false")
            else:
                flags.append(f"{name}={v}")
    return flags


class DedupResult:
    """The outcome of dedup(): one entry per input document, in input order.

    kept[i] is whether document i is kept; cluster[i] is the id of the kept
    document of its cluster (ids default to the positions "0", "1", ...);
    these are exactly the "kept" and "cluster" fields of `neardup dedup
    --clusters` on the same texts and flags. pairs are the duplicate pairs
    (id1, id2, similarity) of `--pairs`; stats is the run's summary, as
    `--stats` writes it.
    """

    def __init__(self, ids: Optional[list[str]], kept: bytes, cluster: array, stats: dict, pairs: Optional[bytes]):
        self._ids = ids
        self._kept_bytes = kept
        self._cluster_pos = cluster
        self.stats: dict = stats
        self._pairs_raw = pairs
        self._kept: Optional[list[bool]] = None
        self._cluster: Optional[list[str]] = None
        self._pairs: Optional[list[tuple[str, str, float]]] = None

    def __len__(self) -> int:
        return len(self._kept_bytes)

    @property
    def ids(self) -> list[str]:
        """The documents' ids."""
        if self._ids is not None:
            return self._ids
        return [str(i) for i in range(len(self))]

    @property
    def kept(self) -> list[bool]:
        """kept[i]: whether document i is the kept one of its cluster."""
        if self._kept is None:
            self._kept = [b == 1 for b in self._kept_bytes]
        return self._kept

    @property
    def cluster(self) -> list[str]:
        """cluster[i]: the id of the kept document of document i's cluster."""
        if self._cluster is None:
            ids = self._ids
            if ids is None:
                self._cluster = [str(p) for p in self._cluster_pos]
            else:
                if any(p < 0 for p in self._cluster_pos):
                    # ids[-1] would name the last document: never guess.
                    raise Error("neardup: a cluster names a document that is not among the ids given")
                self._cluster = [ids[p] for p in self._cluster_pos]
        return self._cluster

    @property
    def cluster_index(self) -> list[int]:
        """cluster_index[i]: the position of the document named by cluster[i]."""
        return list(self._cluster_pos)

    @property
    def removed(self) -> int:
        """How many documents are not kept."""
        return len(self) - sum(self._kept_bytes)

    @property
    def pairs(self) -> list[tuple[str, str, float]]:
        """The duplicate pairs (id1, id2, similarity), as --pairs lists them
        (empty when dedup was called with pairs=False)."""
        if self._pairs is None:
            out = []
            if self._pairs_raw:
                for line in self._pairs_raw.splitlines():
                    p = json.loads(line)
                    out.append((p["id1"], p["id2"], float(p["similarity"])))
            self._pairs = out
        return self._pairs

    def __repr__(self) -> str:
        return f"<DedupResult documents={len(self)} kept={len(self) - self.removed} removed={self.removed}>"


def _is_arrow(x: Any) -> bool:
    return type(x).__module__.startswith("pyarrow")


def _iter_items(texts: Any) -> Iterator[Any]:
    """Items of texts, a batch at a time where the container allows it."""
    if _is_arrow(texts) and hasattr(texts, "slice"):
        n = len(texts)
        for i in range(0, n, _DEFAULT_BATCH):
            yield from texts.slice(i, _DEFAULT_BATCH).to_pylist()
        return
    yield from texts


def dedup(
    texts: Iterable[Any],
    ids: Optional[Iterable[Any]] = None,
    *,
    text_field: str = "text",
    id_field: str = "id",
    pairs: bool = True,
    batch_size: int = _DEFAULT_BATCH,
    **options: Any,
) -> DedupResult:
    """Find the near-duplicates of texts and keep one document of each cluster.

    texts is any iterable of str (or bytes in UTF-8, or dicts whose
    text_field holds the text: rows of a Hugging Face dataset), e.g. a
    list, a generator, a pandas Series, a pyarrow array or a datasets
    column. ids, when given, are the documents' ids (made str); otherwise
    dicts' id_field, otherwise the positions "0", "1", ....

    options are the flags of `neardup dedup` with '_' for '-': method,
    threshold, unit, ngram, num_perm, bands, rows, seed, bits, distance,
    verify, html, t2s, cluster, keep, workers, memory, spill, ... (see
    `neardup dedup --help`); the result's kept and cluster are exactly
    those of `neardup dedup --clusters` with the same flags.

    Documents are sent to the Go library in batches of batch_size as they
    are read, never all held in Python. Ctrl-C stops the run. Raises
    neardup.OptionError (a ValueError) for invalid options and
    neardup.Error for a failed run, with the Go error's message.
    """
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError(f"texts is one {type(texts).__name__}, not a collection of texts: pass a list, e.g. neardup.dedup([text])")
    flags = options_to_flags(options)
    if "examples" not in options and "quiet" not in options:
        flags.append("--examples=0")  # no second pass for the summary's examples
    L = lib()
    err = ctypes.c_void_p()
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number of at least 1, not {batch_size!r}")
    h = check(L.nd_dedup_start(json.dumps(flags).encode(), 1 if pairs else 0, ctypes.byref(err)), err, OptionError)
    try:
        return _run(L, h, texts, ids, text_field, id_field, pairs, batch_size)
    finally:
        L.nd_dedup_free(h)


def _run(L: Any, h: int, texts: Iterable[Any], ids: Optional[Iterable[Any]], text_field: str, id_field: str, want_pairs: bool, batch_size: int) -> DedupResult:
    err = ctypes.c_void_p()
    id_iter = iter(ids) if ids is not None else None
    all_ids: Optional[list[str]] = [] if id_iter is not None else None
    mode_known = id_iter is not None
    batch: list[bytes] = []
    id_batch: list[bytes] = []
    n = 0
    ended = False

    def feed() -> bool:
        buf = b"".join(batch)
        lens = array("q", map(len, batch))
        if all_ids is not None:
            ibuf = b"".join(id_batch)
            ilens = array("q", map(len, id_batch))
            rc = L.nd_dedup_feed(h, buf, lens.buffer_info()[0], ibuf, ilens.buffer_info()[0], len(batch), ctypes.byref(err))
        else:
            rc = L.nd_dedup_feed(h, buf, lens.buffer_info()[0], None, None, len(batch), ctypes.byref(err))
        batch.clear()
        id_batch.clear()
        if rc == -2:
            return False  # the run ended early: its error comes from wait
        check(rc, err)
        return True

    for item in _iter_items(texts):
        doc_id = None
        if isinstance(item, (str, bytes, bytearray, memoryview)):
            text = item
        elif isinstance(item, Mapping):
            if text_field not in item:
                raise Error(f"document {n}: no field {text_field!r} (the row has: {', '.join(map(repr, list(item)[:10]))}); text_field= names the field that holds the text")
            text = item[text_field]
            if not mode_known:
                mode_known = True
                if id_field in item and item[id_field] is not None:
                    all_ids = []
            if all_ids is not None and id_iter is None:
                if id_field not in item or item[id_field] is None:
                    raise Error(f"document {n}: no field {id_field!r} (the first document had one); give every row one, or ids=, or id_field= another field")
                doc_id = item[id_field]
        else:
            raise TypeError(f"document {n}: {type(item).__name__}, want str, bytes or a mapping with {text_field!r}")
        # A text that came as bytes is kept as it came once checked, not
        # decoded and encoded again.
        data = utf8(text, n, "text")
        mode_known = True
        if id_iter is not None:
            try:
                doc_id = next(id_iter)
            except StopIteration:
                raise ValueError(f"fewer ids than texts ({n})") from None
        if all_ids is not None:
            s = doc_id if isinstance(doc_id, str) else str(doc_id)
            if not s:
                # The command line names such a document FILE:LINE, an id
                # that is not among the ones given.
                raise ValueError(f"document {n}: the id is empty; ids must be non-empty strings (leave out ids= for the positions \"0\", \"1\", ...)")
            id_batch.append(utf8(s, n, "id"))
            all_ids.append(s)
        batch.append(data)
        n += 1
        if len(batch) >= batch_size and not feed():
            ended = True
            break
    if id_iter is not None and not ended:
        for _ in id_iter:
            raise ValueError(f"more ids than texts ({n})")
    if batch and not ended:
        feed()
    check(L.nd_dedup_close_input(h, ctypes.byref(err)), err)
    while check(L.nd_dedup_wait(h, 100, ctypes.byref(err)), err) == 0:
        pass  # short waits, so that Ctrl-C is seen between them
    kept = ctypes.create_string_buffer(n)
    cluster = array("q", bytes(8 * n))
    s = L.nd_dedup_result(h, kept, cluster.buffer_info()[0] if n else None, n, ctypes.byref(err))
    if err.value:
        raise Error(take_string(err.value))
    stats = json.loads(take_string(s) or "{}")
    raw = None
    if want_pairs:
        size = ctypes.c_int64()
        p = L.nd_dedup_pairs(h, ctypes.byref(size), ctypes.byref(err))
        if err.value:
            raise Error(take_string(err.value))
        if p:
            try:
                raw = ctypes.string_at(p, size.value)
            finally:
                L.nd_free(p)
    dups = stats.get("duplicate_ids")
    if dups:
        # As `neardup dedup` warns, even with --quiet: cluster and pairs
        # name documents by id, and two documents of one id look alike.
        first = ", ".join(json.dumps(i, ensure_ascii=False) for i in stats.get("duplicate_ids_first", [])[:3])
        warnings.warn(
            f"neardup.dedup: {dups} {'id is' if dups == 1 else 'ids are'} used by more than one document ({first}): "
            "cluster and pairs name documents by id and cannot tell them apart; make the ids unique, "
            "or read cluster_index (positions)",
            UserWarning,
            stacklevel=3,
        )
    return DedupResult(all_ids, kept.raw[:n], cluster, stats, raw)
