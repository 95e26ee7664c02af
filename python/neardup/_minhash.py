"""MinHash and LeanMinHash with datasketch's names and meanings, signed
by the Go library."""

from __future__ import annotations

import ctypes
import struct
from array import array
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ._lib import check, lib, pylib

__all__ = ["MinHash", "LeanMinHash"]

MAX_HASH = (1 << 32) - 1  # an empty slot, as in datasketch
_HASH_RANGE = 1 << 32
_MASK64 = (1 << 64) - 1
_FLUSH_AT = 1 << 16  # pending items hashed at once at most

try:  # numpy is optional: hashvalues are numpy arrays when it is there
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the environment
    _np = None

_EMPTY: dict[int, array] = {}


def _empty(k: int) -> array:
    t = _EMPTY.get(k)
    if t is None:
        t = _EMPTY[k] = array("Q", [MAX_HASH]) * k
    return array("Q", t)


def _element(x: Any) -> bytes:
    """An element as bytes: str in UTF-8, a bytes-like object's bytes; a
    TypeError naming the type for anything else."""
    if isinstance(x, str):
        return x.encode("utf-8")
    try:
        return memoryview(x).tobytes()
    except TypeError:
        raise TypeError(f"a MinHash element is {type(x).__name__}, want bytes (or str, encoded as UTF-8); give hashfunc= to hash other values") from None


def _go_seed(seed: int) -> int:
    # The Go hasher takes a non-zero 64-bit seed; datasketch's seeds are
    # small non-negative integers (default 1).
    return (seed * 0x9E3779B97F4A7C15 + 1) & _MASK64 or 1


class Permutations(tuple):
    """What MinHash.permutations is here: (seed, num_perm). Passing it to
    MinHash(permutations=...) gives the same hash functions, as with
    datasketch; the coefficients themselves live in the Go library."""


class MinHash:
    """MinHash of a set of byte strings, datasketch's API
    (datasketch.MinHash), computed by the Go library.

    The semantics are datasketch's: update/update_batch add elements,
    jaccard estimates the Jaccard similarity as the fraction of equal
    slots, merge is the union, count estimates the cardinality, digest
    returns the slots (uint64 values below 2**32; 0xFFFFFFFF is empty).
    The hash values are neardup's, not datasketch's: elements are hashed
    with xxh3 and the K hash functions are multiply-shift
    ((a*x + b) >> 32), so signatures made here and by datasketch are not
    comparable; estimates and LSH behave alike.

    Speed: update and update_batch only append to a buffer; the buffer is
    hashed in Go in one call when the slots are needed (digest, jaccard,
    hashvalues, LSH insert or query) or when it holds 65536 elements.
    hashfunc, when given, is called in Python per element (as datasketch
    does) and its integer results are used as the element hashes.
    """

    __slots__ = ("seed", "num_perm", "hashfunc", "_hv", "_pending", "_gpu_mode", "__weakref__")

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        hashfunc: Optional[Callable[[Any], int]] = None,
        hashobj: Optional[object] = None,
        hashvalues: Optional[Iterable[int]] = None,
        permutations: Optional[Any] = None,
        gpu_mode: str = "disable",
    ) -> None:
        if hashvalues is not None:
            hv = array("Q", (int(v) for v in hashvalues))
            num_perm = len(hv)
        else:
            hv = None
        if num_perm > _HASH_RANGE:
            raise ValueError("Cannot have more than %d number of permutation functions" % _HASH_RANGE)
        if num_perm < 1:
            raise ValueError("num_perm must be at least 1")
        if hashfunc is not None and not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        if isinstance(permutations, Permutations):
            seed = permutations[0]
            if permutations[1] != num_perm:
                raise ValueError("Numbers of hash values and permutations mismatch")
        self.seed = seed
        self.num_perm = num_perm
        self.hashfunc = hashfunc
        self._hv = hv if hv is not None else _empty(num_perm)
        self._pending: list = []
        self._gpu_mode = gpu_mode

    # ---- buffering ----

    def update(self, b: Any) -> None:
        """Add an element (bytes; str is encoded as UTF-8). Anything else
        that is not a bytes-like object is a TypeError, and not added."""
        if type(b) is not bytes and self.hashfunc is None:
            b = _element(b)
        p = self._pending
        p.append(b)
        if len(p) >= _FLUSH_AT:
            self._flush()

    def update_batch(self, b: Iterable[Any]) -> None:
        """Add many elements at once."""
        self._pending.extend(b)
        if len(self._pending) >= _FLUSH_AT:
            self._flush()

    def _flush(self) -> None:
        p = self._pending
        if not p:
            return
        self._pending = []
        err = ctypes.c_void_p()
        L = lib()
        if self.hashfunc is not None:
            hs = array("Q")
            bad = None
            for x in p:
                try:
                    hs.append(self.hashfunc(x) & _MASK64)
                except Exception as e:  # the others are added, as in datasketch
                    bad = bad or e
            check(L.nd_minhash_update(self.num_perm, _go_seed(self.seed), self._hv.buffer_info()[0], None, hs.buffer_info()[0], len(hs), ctypes.byref(err)), err)
            if bad is not None:
                raise bad
            return
        if type(p) is list:
            P = pylib()
            if P is not None:
                from . import _lib

                o = _lib.LAYOUT
                rc = P.nd_minhash_update_list(self.num_perm, _go_seed(self.seed), self._hv.buffer_info()[0], p, bytes, o[0], o[1], o[2], ctypes.byref(err))
                if rc != -3:  # -3: not all exactly bytes
                    check(rc, err)
                    return
        bad = None
        try:
            buf = b"".join(p)
        except TypeError:
            # Not all bytes-like: str is encoded; anything else (an int,
            # None) is left out, the others added, and a TypeError raised
            # once they are, as datasketch's update raises for it alone.
            # bytes(5) would be five zero bytes: never call bytes(x).
            good = []
            for x in p:
                try:
                    good.append(_element(x))
                except TypeError as e:
                    bad = bad or e
            p = good
            buf = b"".join(p)
        lens = array("q", map(len, p))
        check(L.nd_minhash_update(self.num_perm, _go_seed(self.seed), self._hv.buffer_info()[0], buf, lens.buffer_info()[0], len(p), ctypes.byref(err)), err)
        if bad is not None:
            raise bad

    # ---- state ----

    @property
    def hashvalues(self) -> Any:
        """The slots: a numpy uint64 array sharing memory with this MinHash
        when numpy is installed, else an array('Q')."""
        self._flush()
        if _np is not None:
            return _np.frombuffer(self._hv, dtype=_np.uint64)
        return self._hv

    @hashvalues.setter
    def hashvalues(self, values: Iterable[int]) -> None:
        self._pending = []
        self._hv = array("Q", (int(v) for v in values))
        self.num_perm = len(self._hv)

    @property
    def permutations(self) -> Permutations:
        """The hash functions, as (seed, num_perm) (see Permutations)."""
        return Permutations((self.seed, self.num_perm))

    def _slots(self) -> array:
        if self._pending:
            self._flush()
        return self._hv

    def digest(self) -> Any:
        """A copy of the slots (numpy uint64 array when numpy is installed)."""
        hv = array("Q", self._slots())
        if _np is not None:
            return _np.frombuffer(hv, dtype=_np.uint64).copy()
        return hv

    def _check(self, other: "MinHash", what: str) -> None:
        if other.seed != self.seed:
            raise ValueError(f"Cannot {what} MinHash with different seeds")
        if len(self) != len(other):
            raise ValueError(f"Cannot {what} MinHash with different numbers of permutation functions")

    def jaccard(self, other: "MinHash") -> float:
        """The estimated Jaccard similarity: the fraction of equal slots."""
        self._check(other, "compute Jaccard given")
        a, b = self._slots(), other._slots()
        if a == b:
            return 1.0
        return sum(1 for x, y in zip(a, b) if x == y) / float(len(a))

    def count(self) -> float:
        """The estimated cardinality of the set."""
        hv = self._slots()
        return float(len(hv)) / (sum(hv) / float(MAX_HASH)) - 1.0

    def merge(self, other: "MinHash") -> None:
        """Make this MinHash the union of itself and other."""
        self._check(other, "merge")
        a, b = self._slots(), other._slots()
        self._hv = array("Q", map(min, a, b))

    def is_empty(self) -> bool:
        """Whether no element was added."""
        return not self._pending and self._hv.count(MAX_HASH) == len(self._hv)

    def clear(self) -> None:
        """Forget every element."""
        self._pending = []
        self._hv = _empty(len(self._hv))

    def copy(self) -> "MinHash":
        """An independent copy."""
        m = MinHash.__new__(MinHash)
        m.seed, m.num_perm, m.hashfunc, m._gpu_mode = self.seed, self.num_perm, self.hashfunc, self._gpu_mode
        m._hv = array("Q", self._slots())
        m._pending = []
        return m

    def __len__(self) -> int:
        return len(self._hv)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.seed == other.seed and self._slots() == other._slots()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict:
        return {"seed": self.seed, "hv": self._slots().tobytes(), "hashfunc": self.hashfunc, "gpu": self._gpu_mode}

    def __setstate__(self, state: dict) -> None:
        self.seed, self.hashfunc, self._gpu_mode = state["seed"], state["hashfunc"], state.get("gpu", "disable")
        self._hv = array("Q")
        self._hv.frombytes(state["hv"])
        self.num_perm = len(self._hv)
        self._pending = []

    @classmethod
    def union(cls, *mhs: "MinHash") -> "MinHash":
        """A new MinHash, the union of mhs (at least 2)."""
        if len(mhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        first = mhs[0]
        for m in mhs[1:]:
            first._check(m, "union")
        hv = array("Q", first._slots())
        for m in mhs[1:]:
            hv = array("Q", map(min, hv, m._slots()))
        if cls is LeanMinHash:
            return LeanMinHash(seed=first.seed, hashvalues=hv)
        return cls(num_perm=len(hv), seed=first.seed, hashfunc=first.hashfunc, hashvalues=hv, gpu_mode=first._gpu_mode)

    @classmethod
    def bulk(cls, b: Iterable[Iterable[Any]], **minhash_kwargs: Any) -> list["MinHash"]:
        """MinHashes of many sets (each an iterable of bytes), signed in
        one call to Go per chunk of sets: the fastest way to sign a corpus."""
        return list(cls.generator(b, **minhash_kwargs))

    @classmethod
    def generator(cls, b: Iterable[Iterable[Any]], **minhash_kwargs: Any) -> Iterator["MinHash"]:
        """bulk, one MinHash at a time, signing 1024 sets per call."""
        chunk: list[list] = []
        for s in b:
            chunk.append(list(s))
            if len(chunk) == 1024:
                yield from _sign_many(cls, chunk, minhash_kwargs)
                chunk = []
        if chunk:
            yield from _sign_many(cls, chunk, minhash_kwargs)


def _sign_many(cls: type, sets: list[list], kwargs: dict) -> list[MinHash]:
    proto = MinHash(**kwargs)
    if proto.hashfunc is not None:
        out = []
        for s in sets:
            m = proto.copy()
            m.update_batch(s)
            m._flush()
            out.append(m)
        return out
    k = proto.num_perm
    items = [x.encode("utf-8") if isinstance(x, str) else x for s in sets for x in s]
    buf = b"".join(items)
    lens = array("q", map(len, items))
    counts = array("q", map(len, sets))
    sigs = _empty(k) * len(sets)
    err = ctypes.c_void_p()
    check(lib().nd_minhash_bulk(k, _go_seed(proto.seed), sigs.buffer_info()[0], buf, lens.buffer_info()[0] if items else None, counts.buffer_info()[0], len(sets), ctypes.byref(err)), err)
    out = []
    for i in range(len(sets)):
        m = MinHash.__new__(MinHash)
        m.seed, m.num_perm, m.hashfunc, m._gpu_mode = proto.seed, k, None, proto._gpu_mode
        m._hv = sigs[i * k : (i + 1) * k]
        m._pending = []
        out.append(m)
    return out


class LeanMinHash(MinHash):
    """An immutable MinHash (datasketch.LeanMinHash): seed and slots only;
    smaller to keep and to serialize (bytesize, serialize, deserialize)."""

    __slots__ = ()

    def __init__(self, minhash: Optional[MinHash] = None, seed: Optional[int] = None, hashvalues: Optional[Iterable[int]] = None) -> None:
        if minhash is not None:
            self.seed = minhash.seed
            self._hv = array("Q", minhash._slots())
        elif hashvalues is not None and seed is not None:
            self.seed = seed
            self._hv = array("Q", (int(v) for v in hashvalues))
        else:
            raise ValueError("Init parameters cannot be None: make sure to set both seed and hashvalues")
        self.num_perm = len(self._hv)
        self.hashfunc = None
        self._pending = []
        self._gpu_mode = "disable"

    def update(self, b: Any) -> None:
        raise TypeError("Cannot update a LeanMinHash")

    def update_batch(self, b: Iterable[Any]) -> None:
        raise TypeError("Cannot update a LeanMinHash")

    def merge(self, other: MinHash) -> None:
        """Make this the union with other (allowed, as in datasketch)."""
        super().merge(other)

    def clear(self) -> None:
        raise TypeError("Cannot clear a LeanMinHash")

    def copy(self) -> "LeanMinHash":
        return LeanMinHash(seed=self.seed, hashvalues=self._hv)

    def bytesize(self, byteorder: str = "@") -> int:
        """Bytes that serialize needs: seed (8), length (4), slots (4 each)."""
        return struct.calcsize(byteorder + "qi%dI" % len(self))

    def serialize(self, buf: Any, byteorder: str = "@") -> None:
        """Write this MinHash to buf (a writable buffer of bytesize bytes)."""
        if len(buf) < self.bytesize(byteorder):
            raise ValueError("The buffer does not have enough space for holding this MinHash.")
        fmt = "%sqi%dI" % (byteorder, len(self))
        struct.pack_into(fmt, buf, 0, self.seed, len(self), *self._hv)

    @classmethod
    def deserialize(cls, buf: Any, byteorder: str = "@") -> "LeanMinHash":
        """The LeanMinHash that serialize wrote to buf."""
        fmt_seed_size = "%sqi" % byteorder
        try:
            seed, num_perm = struct.unpack_from(fmt_seed_size, buf, 0)
        except TypeError:
            seed, num_perm = struct.unpack_from(fmt_seed_size, buffer(buf), 0)  # type: ignore[name-defined]  # noqa: F821
        offset = struct.calcsize(fmt_seed_size)
        hv = struct.unpack_from("%s%dI" % (byteorder, num_perm), buf, offset)
        return cls(seed=seed, hashvalues=hv)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.seed, self._hv.tobytes()))

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, (bytes, bytearray, memoryview)):
            lm = LeanMinHash.deserialize(state)
            self.seed, self._hv = lm.seed, lm._hv
            self.num_perm, self.hashfunc, self._pending, self._gpu_mode = len(self._hv), None, [], "disable"
            return
        super().__setstate__(state)
        self.hashfunc = None

    def __getstate__(self) -> Any:
        buf = bytearray(self.bytesize())
        self.serialize(buf)
        return bytes(buf)
