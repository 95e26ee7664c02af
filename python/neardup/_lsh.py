"""MinHashLSH with datasketch's names and meanings, over the Go library's
banded index (package lsh)."""

from __future__ import annotations

import ctypes
import struct
import threading
from array import array
from typing import Any, Hashable, Iterable, Iterator, Optional

from ._lib import check, lib
from ._minhash import MinHash

__all__ = ["MinHashLSH"]


class MinHashLSH:
    """Banded LSH index of MinHashes for Jaccard threshold queries
    (datasketch.MinHashLSH): keys are any hashable values.

    threshold, num_perm, weights and params mean what they mean in
    datasketch: without params, (b, r) minimise the weighted false positive
    and false negative areas (datasketch's rule; 9 bands of 13 rows at 0.8
    with 128 permutations). The band tables live in Go (package lsh), one
    ctypes call an insert or query. storage_config is in-memory only
    ({"type": "dict"}); for a persistent or Redis index use neardup.Index.

    Queries give the keys that share at least one band with the query, in
    no particular order, as datasketch does. An index pickles (its keys and
    signatures are saved and re-inserted on load).
    """

    def __init__(
        self,
        threshold: float = 0.9,
        num_perm: int = 128,
        weights: tuple[float, float] = (0.5, 0.5),
        params: Optional[tuple[int, int]] = None,
        storage_config: Optional[dict] = None,
        prepickle: Optional[bool] = None,
        hashfunc: Optional[Any] = None,
    ) -> None:
        if not 0.0 < threshold <= 1.0:  # NaN too; 0 finds every pair: Go refuses it
            raise ValueError(f"threshold must be in (0.0, 1.0], not {threshold!r}")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        if storage_config is not None and storage_config.get("type", "dict") != "dict":
            raise ValueError("neardup.MinHashLSH keeps its tables in memory; use neardup.Index for a persistent or Redis index")
        self.h = num_perm
        self.threshold = threshold
        self.weights = tuple(weights)
        bands, rows = (0, 0) if params is None else params
        if params is not None and not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (bands, rows)):
            # 0 or less asked Go to choose the banding, silently.
            raise ValueError(f"params must be (b, r): two whole numbers of at least 1, not {tuple(params)!r}")
        if params is not None and bands * rows > num_perm:
            raise ValueError("The product of b and r in params is %d and must be less than num_perm %d" % (bands * rows, num_perm))
        br = array("q", [0, 0])
        err = ctypes.c_void_p()
        L = lib()
        self._h = check(L.nd_lsh_new(threshold, num_perm, weights[0], weights[1], bands, rows, br.buffer_info()[0], ctypes.byref(err)), err, ValueError)
        self._free = L.nd_lsh_free
        self.b, self.r = int(br[0]), int(br[1])
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self._ids: dict[Hashable, int] = {}
        self._keys_of: dict[int, Hashable] = {}
        self._more: dict[Hashable, list[int]] = {}  # further ids of a key (merge)
        self._next = 0
        self._out = array("I", bytes(4 * 256))
        self._buffer: list[MinHash] = []
        # Calls into Go release the GIL: one lock keeps each insert, query
        # and removal whole, with its Python bookkeeping and buffers.
        self._lock = threading.Lock()

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            self._free(h)
            self._h = None

    # ---- datasketch API ----

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        """Add minhash under key; a key already there is a ValueError."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        sig = minhash._slots().buffer_info()[0]
        with self._lock:
            if key in self._ids:
                if check_duplication:
                    raise ValueError("The given key already exists")
                self._remove(key)
            i = self._next
            self._next = i + 1
            err = ctypes.c_void_p()
            check(lib().nd_lsh_insert(self._h, i, sig, ctypes.byref(err)), err)
            self._ids[key] = i
            self._keys_of[i] = key

    def query(self, minhash: MinHash) -> list:
        """The keys of the candidates of minhash: those sharing a band."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        err = ctypes.c_void_p()
        sig = minhash._slots().buffer_info()[0]
        with self._lock:
            out = self._out
            n = check(lib().nd_lsh_query(self._h, sig, out.buffer_info()[0], len(out), ctypes.byref(err)), err)
            if n > len(out):
                self._out = out = array("I", bytes(4 * n))
                n = check(lib().nd_lsh_query(self._h, sig, out.buffer_info()[0], len(out), ctypes.byref(err)), err)
            keys = self._keys_of
            if self._more:
                return list(dict.fromkeys(keys[i] for i in out[:n]))
            return [keys[i] for i in out[:n]]

    def remove(self, key: Hashable) -> None:
        """Remove key; an absent key is a ValueError."""
        with self._lock:
            self._remove(key)

    def _remove(self, key: Hashable) -> None:
        i = self._ids.get(key)
        if i is None:
            raise ValueError("The given key does not exist")
        err = ctypes.c_void_p()
        for j in [i] + self._more.pop(key, []):
            check(lib().nd_lsh_remove(self._h, j, ctypes.byref(err)), err)
            del self._keys_of[j]
        del self._ids[key]

    def merge(self, other: "MinHashLSH", check_overlap: bool = False) -> None:
        """Make this index the union of itself and other (same num_perm and
        banding). A key in both stays one key with both signatures, unless
        check_overlap, which makes that a ValueError before any change."""
        if (self.h, self.b, self.r) != (other.h, other.b, other.r):
            raise ValueError("Cannot merge MinHashLSH with different num_perm or banding")
        if check_overlap and any(k in self._ids for k in other._ids):
            raise ValueError("The keys of the two indexes overlap")
        for key, ids in other._all_ids():
            for j in ids:
                self._insert_signature(key, other._signature(j))

    def _insert_signature(self, key: Hashable, raw: bytes) -> None:
        """Insert a signature (k uint64 slots) under key, a further one
        when key is there already (merge, unpickling)."""
        sig = array("Q")
        sig.frombytes(raw)
        with self._lock:
            i = self._next
            self._next = i + 1
            err = ctypes.c_void_p()
            check(lib().nd_lsh_insert(self._h, i, sig.buffer_info()[0], ctypes.byref(err)), err)
            self._keys_of[i] = key
            if key in self._ids:
                self._more.setdefault(key, []).append(i)
            else:
                self._ids[key] = i

    def _all_ids(self) -> Iterator[tuple[Hashable, list[int]]]:
        for k, i in self._ids.items():
            yield k, [i] + self._more.get(k, [])

    def __contains__(self, key: Hashable) -> bool:
        return key in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def is_empty(self) -> bool:
        """Whether the index holds no key."""
        return not self._ids

    def insertion_session(self, buffer_size: int = 50000) -> "_Session":
        """A context manager for many inserts (datasketch's API; inserts go
        straight to the Go index, which needs no buffering)."""
        return _Session(self)

    def deletion_session(self, buffer_size: int = 50000) -> "_Session":
        """A context manager for many removals."""
        return _Session(self)

    def add_to_query_buffer(self, minhash: MinHash) -> None:
        """Queue a query for collect_query_buffer."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        self._buffer.append(minhash)

    def collect_query_buffer(self) -> list:
        """The keys that are candidates of every queued query (their
        intersection, as datasketch), and empty the queue."""
        buf, self._buffer = self._buffer, []
        if not buf:
            return []
        result = set(self.query(buf[0]))
        for m in buf[1:]:
            result &= set(self.query(m))
        return list(result)

    # ---- views for code that reads datasketch's internals ----

    def _band_keys(self, i: int) -> list[bytes]:
        out = array("Q", bytes(8 * self.b))
        err = ctypes.c_void_p()
        check(lib().nd_lsh_keys(self._h, i, 0, out.buffer_info()[0], ctypes.byref(err)), err)
        return [struct.pack("<Q", v) for v in out]

    @property
    def keys(self) -> dict:
        """key -> its band keys (bytes), as datasketch's lsh.keys (built on
        each access: for inspection, not for hot loops)."""
        return {k: [H for j in ids for H in self._band_keys(j)] for k, ids in self._all_ids()}

    @property
    def hashtables(self) -> list[dict]:
        """Per band, band key -> keys, as datasketch's lsh.hashtables (built
        on each access)."""
        tables: list[dict] = [{} for _ in range(self.b)]
        for k, ids in self._all_ids():
            for j in ids:
                for t, H in zip(tables, self._band_keys(j)):
                    t.setdefault(H, set()).add(k)
        return tables

    def get_counts(self) -> list[dict]:
        """Per band, band key -> number of keys."""
        return [{H: len(ks) for H, ks in t.items()} for t in self.hashtables]

    def __getstate__(self) -> dict:
        sigs = {}
        for k, ids in self._all_ids():
            sigs[k] = [self._signature(j) for j in ids]
        return {"threshold": self.threshold, "num_perm": self.h, "weights": self.weights, "params": (self.b, self.r), "sigs": sigs}

    def _signature(self, i: int) -> bytes:
        out = array("Q", bytes(8 * self.h))
        err = ctypes.c_void_p()
        check(lib().nd_lsh_keys(self._h, i, 1, out.buffer_info()[0], ctypes.byref(err)), err)
        return out.tobytes()

    def __setstate__(self, state: dict) -> None:
        self.__init__(threshold=state["threshold"], num_perm=state["num_perm"], weights=state["weights"], params=state["params"])
        for k, raws in state["sigs"].items():
            for raw in raws:
                self._insert_signature(k, raw)


class _Session:
    def __init__(self, lsh: MinHashLSH) -> None:
        self.lsh = lsh

    def __enter__(self) -> "_Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        self.lsh.insert(key, minhash, check_duplication)

    def remove(self, key: Hashable) -> None:
        self.lsh.remove(key)
