"""neardup for Python: near-duplicate detection, in-process.

- dedup(texts, ids=None, **options): the `neardup dedup` pipeline on
  Python data; kept and cluster are exactly the command line's.
- MinHash, LeanMinHash, MinHashLSH: datasketch's classes and methods
  (replace `from datasketch import ...` with `from neardup import ...`),
  computed by the Go library; the hash values are neardup's own.
- Index(path_or_redis_url): the persistent index of `neardup index` and
  `neardup serve` (check_and_add, query, add, remove).
- The `neardup` command itself is installed with the package.

The Go library is a shared library (libneardup.so) loaded with ctypes on
first use. docs/python.md in the repository has the guide.
"""

from ._dedup import DedupResult, dedup
from ._index import Index, Match, Result
from ._lib import Error, OptionError, StorageError
from ._lsh import MinHashLSH
from ._minhash import LeanMinHash, MinHash

try:
    from ._version import __version__
except ImportError:  # a source checkout, not an installed wheel
    __version__ = "0+unknown"

__all__ = ["dedup", "DedupResult", "Index", "Match", "Result", "MinHash", "LeanMinHash", "MinHashLSH", "Error", "OptionError", "StorageError", "__version__"]
