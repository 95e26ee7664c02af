"""Signing throughput of datasketch (ekzhu/datasketch, pure Python over
numpy) on the documents of BenchmarkFloor, for issue 18's per-core ratio.

The job is the one neardup and ekzhu do in BenchmarkFloor: lower-case the
raw text, split it into words (runs of letters and digits, which is
neardup's Word token on ASCII text), join every word 5-gram with a space
(a text with fewer than 5 words is one shingle), and build a 128-slot
MinHash with datasketch's documented fast path, update_batch. CPU time of
this process (time.process_time) over the signing loop only, after the
documents are read. Run from bench/minhash with Debian's Python, numpy
and scipy (apt-get install python3-numpy python3-scipy):

    PYTHONPATH=../../../shared/peers/datasketch /usr/bin/python3 datasketch_bench.py \
        [docs.jsonl.gz] [max docs] [repeats]
"""

import gzip
import json
import os
import re
import sys
import time

from datasketch import MinHash

WORD = re.compile(r"[^\W_]+")
NGRAM = 5
NUM_PERM = 128


def load(path, limit):
    docs = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if len(docs) >= limit:
                break
            docs.append(json.loads(line)["text"])
    return docs


def shingles(text):
    toks = WORD.findall(text.lower())
    if not toks:
        return []
    n = min(NGRAM, len(toks))
    return [" ".join(toks[i : i + n]).encode("utf-8") for i in range(len(toks) - n + 1)]


def shared_data(name):
    """The path of name in the nearest shared/data above this file."""
    d = os.path.dirname(os.path.abspath(__file__))
    while True:
        p = os.path.join(d, "shared", "data", name)
        if os.path.exists(p) or os.path.dirname(d) == d:
            return p
        d = os.path.dirname(d)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else shared_data("bbc-news/docs.jsonl.gz")
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 30
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    docs = load(path, limit)
    size = sum(len(d.encode("utf-8")) for d in docs)
    total = sum(len(shingles(d)) for d in docs)
    # One MinHash made first: its permutations are drawn once per
    # process; each document then gets a copy with fresh minima, the
    # cheapest documented way to sign many documents with the same
    # permutations.
    proto = MinHash(num_perm=NUM_PERM)
    best = None
    for _ in range(repeats):
        c0 = time.process_time()
        for d in docs:
            m = MinHash(num_perm=NUM_PERM, permutations=proto.permutations)
            sh = shingles(d)
            if sh:
                m.update_batch(sh)
            m.digest()
        cpu = time.process_time() - c0
        best = cpu if best is None else min(best, cpu)
        print(f"datasketch: {len(docs)} documents, {size} bytes, {total} shingles from {path}: "
              f"{cpu * 1e9 / len(docs):.0f} CPU-ns/doc, {size / cpu / 1e6:.2f} MB/s of CPU")
    print(f"datasketch best: {best * 1e9 / len(docs):.0f} CPU-ns/doc")


if __name__ == "__main__":
    main()
