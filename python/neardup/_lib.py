"""Loading libneardup (the Go library built with -buildmode=c-shared) and
turning its errors into exceptions. Internal."""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, c_char_p, c_double, c_int, c_int64, c_uint32, c_uint64, c_void_p

__all__ = ["Error", "OptionError", "StorageError", "lib", "check", "take_string"]


class Error(Exception):
    """An error of the Go library; the message is the Go error's."""


class OptionError(Error, ValueError):
    """An invalid option (the message names the command line's flag)."""


class StorageError(Error, OSError):
    """The index's storage failed: a folder that cannot be made or opened,
    an index already open, a Redis server that does not answer."""


_lib: ctypes.CDLL | None = None
_pylib: ctypes.PyDLL | None = None
# Offsets of CPython's object layout for nd_minhash_update_list, checked
# on this interpreter by _layout(); None where they do not hold (PyPy).
LAYOUT: tuple[int, int, int] | None = None
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
    "nd_lsh_keys": (_I64, [_I64, c_uint32, c_int, c_void_p, _ERR]),
    "nd_lsh_free": (None, [_I64]),
    "nd_index_open": (_I64, [c_char_p, c_char_p, _ERR]),
    "nd_index_batch": (c_void_p, [_I64, _I64, c_char_p, c_void_p, c_char_p, c_void_p, _I64, _I64, _ERR]),
    "nd_index_remove": (_I64, [_I64, c_char_p, _I64, _ERR]),
    "nd_index_info": (c_void_p, [_I64, _ERR]),
    "nd_index_close": (_I64, [_I64, _ERR]),
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
                global _pylib, LAYOUT
                LAYOUT = _layout()
                if LAYOUT is not None:
                    # The same library, called with the GIL held: the
                    # function reads Python objects in place.
                    p = ctypes.PyDLL(library_path())
                    f = p.nd_minhash_update_list
                    f.restype = c_int64
                    f.argtypes = [c_int64, c_uint64, c_void_p, ctypes.py_object, ctypes.py_object, c_int64, c_int64, c_int64, _ERR]
                    _pylib = p
                _lib = l
    return _lib


def pylib() -> ctypes.PyDLL | None:
    """The library for calls that hold the GIL, or None without LAYOUT."""
    lib()
    return _pylib


def _layout() -> tuple[int, int, int] | None:
    """(ob_size, list ob_item, bytes ob_sval) offsets of this CPython,
    checked on live objects; None when they are not the expected ones."""
    import platform
    import sys

    if platform.python_implementation() != "CPython" or ctypes.sizeof(c_void_p) != 8:
        return None
    off_size, off_items, off_data = 16, 24, sys.getsizeof(b"") - 1
    try:
        b = b"neardup-layout-check"
        lst = [b, b"x"]
        if ctypes.c_ssize_t.from_address(id(b) + off_size).value != len(b):
            return None
        if ctypes.string_at(id(b) + off_data, len(b)) != b:
            return None
        if ctypes.c_ssize_t.from_address(id(lst) + off_size).value != 2:
            return None
        items = ctypes.c_void_p.from_address(id(lst) + off_items).value
        if ctypes.c_void_p.from_address(items).value != id(b):
            return None
        if ctypes.c_void_p.from_address(id(b) + 8).value != id(bytes):
            return None
    except Exception:
        return None
    return off_size, off_items, off_data


def take_string(p: int | None) -> str | None:
    """The Go-allocated C string at p, freed."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        lib().nd_free(p)


def check(rc: int, err: c_void_p, exc: type[Exception] = Error) -> int:
    """rc, or the exception of the error in err when rc is -1.

    An error the command line would call a usage error ("usage: ..."),
    found only once the run started (an --idf file that is not one), is
    an OptionError too, as it is when the options are parsed."""
    if err.value:
        msg = take_string(err.value)
        if exc is Error and msg.startswith("usage:"):
            exc = OptionError
        raise exc(msg)
    if rc == -1:
        raise exc("neardup: unknown error")
    return rc
