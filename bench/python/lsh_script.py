"""A datasketch user's script, as datasketch's documentation writes it:
MinHash of word 5-grams (built with update per shingle, or update_batch),
then MinHashLSH(threshold=0.8, num_perm=128) with insert and query. The
import line below is the only line that run.sh changes to run it on
neardup.

    python3 lsh_script.py DOCS.jsonl.gz [update|update_batch] [REPEAT]

Prints one JSON line: wall and CPU seconds of the whole job (shingling
included), of the MinHash/LSH calls alone (shingles made beforehand),
and of the script's own shingling alone (which no library changes),
and the candidate pairs' precision and recall against the exact Jaccard
join (pairs of exact similarity >= 0.8 of the same shingle sets, found
by an inverted index).
"""

from datasketch import MinHash, MinHashLSH

import gzip
import json
import re
import sys
import time
from collections import defaultdict

WORD = re.compile(r"[^\W_]+")


def shingles(text):
    toks = WORD.findall(text.lower())
    if not toks:
        return []
    n = min(5, len(toks))
    return [" ".join(toks[i : i + n]).encode("utf-8") for i in range(len(toks) - n + 1)]


def job(docs, mode, pre):
    mhs = {}
    for i, (key, text) in enumerate(docs):
        sh = pre[i] if pre is not None else shingles(text)
        m = MinHash(num_perm=128)
        if mode == "update":
            for s in sh:
                m.update(s)
        else:
            m.update_batch(sh)
        mhs[key] = m
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    with lsh.insertion_session() as session:
        for key, m in mhs.items():
            session.insert(key, m)
    pairs = set()
    for key, m in mhs.items():
        for other in lsh.query(m):
            if other != key:
                pairs.add((min(key, other), max(key, other)))
    return pairs


def exact_pairs(sets, threshold):
    index = defaultdict(list)
    for key, s in sets.items():
        for x in s:
            index[x].append(key)
    inter = defaultdict(int)
    for keys in index.values():
        if len(keys) > 200:  # a boilerplate shingle: the pairs it joins share others too
            continue
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                a, b = keys[i], keys[j]
                inter[(min(a, b), max(a, b))] += 1
    out = set()
    for (a, b), n in inter.items():
        if n / (len(sets[a]) + len(sets[b]) - n) >= threshold:
            out.add((a, b))
    return out


def main():
    path = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "update_batch"
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    docs = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            docs.append((d["id"], d["text"]))
    best = {}
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        pairs = job(docs, mode, None)
        w1, c1 = time.perf_counter(), time.process_time()
        pre = [shingles(t) for _, t in docs]
        w2, c2 = time.perf_counter(), time.process_time()
        job(docs, mode, pre)
        w3, c3 = time.perf_counter(), time.process_time()
        for k, v in (("job_wall", w1 - w0), ("job_cpu", c1 - c0), ("api_wall", w3 - w2), ("api_cpu", c3 - c2),
                     ("shingle_wall", w2 - w1), ("shingle_cpu", c2 - c1)):
            best[k] = min(best.get(k, v), v)
    sets = {key: set(shingles(text)) for key, text in docs}
    truth = exact_pairs(sets, 0.8)
    tp = len(pairs & truth)
    print(json.dumps({
        "library": MinHash.__module__.split(".")[0],
        "mode": mode,
        "documents": len(docs),
        **{k: round(v, 3) for k, v in best.items()},
        "candidates": len(pairs),
        "truth_pairs": len(truth),
        "precision": round(tp / len(pairs), 4) if pairs else 1.0,
        "recall": round(tp / len(truth), 4) if truth else 1.0,
    }))


if __name__ == "__main__":
    main()
