"""Loading libneardup (the Go library built with -buildmode=c-shared) and
turning its errors into exceptions. Internal."""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, c_char_p, c_double, c_int, c_int64, c_uint32, c_uint64, c_void_p

__all__ = ["Error", "lib", "check", "take_string"]


class Error(Exception):
    """An error of the Go library; the message is the Go error's."""


class OptionError(Error, ValueError):
    """An invalid option (the message names the command line's flag)."""


_lib: ctypes.CDLL | None = None
_lock = threading.Lock()

_I64 = c_int64
_ERR = POINTER(c_void_p)

# name: (restype, argtypes)
_SIGNATURES = {
    "nd_free": (None, [c_void_p]),
    "nd_dedup_start": (_I64, [c_char_p, c_int, _ERR]),
    "nd_dedup_feed": (_I64, [_I64, c_char_p, c_void_p, c_char_p, c_void_p, _I64, _ERR]),
    "nd_dedup_close_input": (_I64, [_I64, _ERR]),
    "nd_dedup_wait": (_I64, [_I64, _I64, _ERR]),
    "nd_dedup_result": (c_void_p, [_I64, c_void_p, c_void_p, _I64, _ERR]),
    "nd_dedup_pairs": (c_void_p, [_I64, POINTER(c_int64), _ERR]),
    "nd_dedup_free": (None, [_I64]),
    "nd_minhash_update": (_I64, [_I64, c_uint64, c_void_p, c_char_p, c_void_p, _I64, _ERR]),
    "nd_minhash_bulk": (_I64, [_I64, c_uint64, c_void_p, c_char_p, c_void_p, c_void_p, _I64, _ERR]),
    "nd_lsh_new": (_I64, [c_double, _I64, c_double, c_double, _I64, _I64, c_void_p, _ERR]),
    "nd_lsh_insert": (_I64, [_I64, c_uint32, c_void_p, _ERR]),
    "nd_lsh_query": (_I64, [_I64, c_void_p, c_void_p, _I64, _ERR]),
    "nd_lsh_remove": (_I64, [_I64, c_uint32, _ERR]),
    "nd_lsh_keys": (_I64, [_I64, c_uint32, c_void_p, _ERR]),
    "nd_lsh_signature": (_I64, [_I64, c_uint32, c_void_p, _ERR]),
    "nd_lsh_free": (None, [_I64]),
}


def library_path() -> str:
    """The shared library's path: $NEARDUP_LIBRARY, else the one beside
    this file."""
    return os.environ.get("NEARDUP_LIBRARY") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "libneardup.so")


def lib() -> ctypes.CDLL:
    """The loaded library, loaded on first use (the Go runtime starts then,
    so that `import neardup` alone costs nothing and survives fork)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                l = ctypes.CDLL(library_path())
                for name, (res, args) in _SIGNATURES.items():
                    f = getattr(l, name)
                    f.restype = res
                    f.argtypes = args
                _lib = l
    return _lib


def take_string(p: int | None) -> str | None:
    """The Go-allocated C string at p, freed."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        lib().nd_free(p)


def check(rc: int, err: c_void_p, exc: type[Exception] = Error) -> int:
    """rc, or the exception of the error in err when rc is -1."""
    if err.value:
        raise exc(take_string(err.value))
    if rc == -1:
        raise exc("neardup: unknown error")
    return rc
