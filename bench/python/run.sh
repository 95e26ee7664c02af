#!/usr/bin/env bash
# Runs lsh_script.py, a datasketch user's script, twice per mode: as it
# is, on datasketch from ../shared/peers/datasketch (Debian's python3
# with python3-numpy and python3-scipy), and with its import line alone
# changed to `from neardup import ...`, on the neardup wheel installed in
# the virtual environment VENV (scripts/wheel; pip install --no-index).
#
#   bench/python/run.sh VENV [DOCS.jsonl.gz] [REPEAT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$1
docs=${2:-$here/../../../shared/data/bbc-news/docs.jsonl.gz}
repeat=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^from datasketch import MinHash, MinHashLSH$/from neardup import MinHash, MinHashLSH/' \
  "$here/lsh_script.py" > "$tmp/lsh_script_neardup.py"
diff "$here/lsh_script.py" "$tmp/lsh_script_neardup.py" || true
for mode in update update_batch; do
  PYTHONPATH="$here/../../../shared/peers/datasketch" /usr/bin/python3 "$here/lsh_script.py" "$docs" $mode "$repeat"
  (cd "$tmp" && "$venv/bin/python" lsh_script_neardup.py "$docs" $mode "$repeat")
done
