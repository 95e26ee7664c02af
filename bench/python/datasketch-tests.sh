#!/usr/bin/env bash
# Runs datasketch's own tests of MinHash, MinHashLSH and LeanMinHash
# (test/test_minhash.py::TestMinHash, test/test_lsh.py::TestMinHashLSH,
# test/test_lean_minhash.py of github.com/ekzhu/datasketch) against
# neardup's classes: a shim package named datasketch maps its modules to
# neardup's. The Redis-backed tests are left out (neardup.MinHashLSH is
# in memory; neardup.Index is the persistent one), and test_byte_tokens
# fails by design: it checks datasketch's hash values.
#
#   bench/python/datasketch-tests.sh VENV DATASKETCH_CHECKOUT
set -euo pipefail
venv=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/shim/datasketch" "$tmp/test"
cp "$src"/test/{__init__,utils,test_minhash,test_lsh,test_lean_minhash}.py "$tmp/test/"
cat > "$tmp/shim/datasketch/__init__.py" <<'PY'
from neardup import LeanMinHash, MinHash, MinHashLSH
PY
echo "from neardup import MinHash" > "$tmp/shim/datasketch/minhash.py"
echo "from neardup import MinHashLSH" > "$tmp/shim/datasketch/lsh.py"
echo "from neardup import LeanMinHash" > "$tmp/shim/datasketch/lean_minhash.py"
# Imported by the test modules for classes neardup does not provide.
echo "class bBitMinHash: pass" > "$tmp/shim/datasketch/b_bit_minhash.py"
echo "class WeightedMinHashGenerator: pass" > "$tmp/shim/datasketch/weighted_minhash.py"
echo "def mock_redis_client(**kw): raise RuntimeError('no Redis in this shim')" > "$tmp/shim/mockredis.py"
cd "$tmp"
PYTHONPATH="$tmp/shim" "$venv/bin/python" -m pytest -p no:cacheprovider -q -rf \
  test/test_minhash.py::TestMinHash test/test_lsh.py::TestMinHashLSH test/test_lean_minhash.py -k "not redis"
