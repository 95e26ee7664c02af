"""neardup.dedup against `neardup dedup --clusters` on every JSONL set of
shared/data: the same documents (ids and texts read from docs.jsonl.gz),
the same flags, and the kept and cluster fields must be equal. Run in a
virtual environment with the wheel installed:

    python parity.py [SHARED_DATA_DIR]

Prints one line per (set, flags) and exits 1 on any difference.
"""

import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import neardup
from neardup import _cli
from neardup._dedup import options_to_flags

FLAGSETS = [{}, {"method": "simhash"}, {"unit": "char", "ngram": 3, "threshold": 0.7}]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../../shared/data")
    bad = 0
    for path in sorted(glob.glob(os.path.join(root, "*/docs.jsonl.gz"))):
        name = os.path.basename(os.path.dirname(path))
        ids, texts = [], []
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                ids.append(d["id"])
                texts.append(d["text"])
        for opts in FLAGSETS:
            if name == "html-pages":
                opts = dict(opts, html=True)
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "c.jsonl")
                t0 = time.perf_counter()
                subprocess.run([_cli.binary(), "dedup", "-q", "--clusters", out, *options_to_flags(opts), path], check=True)
                t1 = time.perf_counter()
                rows = [json.loads(l) for l in open(out, encoding="utf-8")]
            r = neardup.dedup(texts, ids=ids, pairs=False, **opts)
            t2 = time.perf_counter()
            same = r.kept == [x["kept"] for x in rows] and r.cluster == [x["cluster"] for x in rows]
            bad += not same
            print(f"{'same' if same else 'DIFFERENT'}  {name:18} {json.dumps(opts):50} docs={len(texts):6} removed={r.removed:5}  cli {t1 - t0:.2f}s  python {t2 - t1:.2f}s", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
