"""neardup.dedup over the texts of a JSONL file held in a Python list,
timed from the call to the result (reading the file is not timed), for
the comparison with `neardup dedup` on the file itself (run.md in
docs/benchmarks.md has the commands):

    python dedup_list.py DOCS.jsonl [FLAGS-AS-KEY=VALUE...]
"""

import json
import resource
import sys
import time

import neardup


def main():
    texts = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            texts.append(json.loads(line)["text"])
    opts = dict(a.split("=", 1) for a in sys.argv[2:])
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    w0, c0 = time.perf_counter(), time.process_time()
    r = neardup.dedup(texts, pairs=False, **opts)
    w1, c1 = time.perf_counter(), time.process_time()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"documents": len(r), "removed": r.removed, "wall_s": round(w1 - w0, 2), "cpu_s": round(c1 - c0, 2),
                      "peak_rss_mib_before": rss0 // 1024, "peak_rss_mib": rss1 // 1024}))


if __name__ == "__main__":
    main()
