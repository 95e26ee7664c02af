#!/bin/sh
# Issue 18's per-core comparison in one run on the same documents: the
# floor, neardup's signing path, ekzhu/minhash-lsh (BenchmarkFloor) and
# datasketch (datasketch_bench.py), one after the other on one core.
# Run from bench/minhash; DATA is a docs.jsonl.gz (default bbc-news).
#   sh peers.sh [DATA]
set -e
data=${1:-}
peers=$(cd ../../.. && pwd)/shared/peers/datasketch
[ -d "$peers" ] || peers=$(cd ../../../.. && pwd)/shared/peers/datasketch
uptime
go test -c -o /tmp/neardup-floor.test .
NEARDUP_FLOOR_DATA=$data /tmp/neardup-floor.test -test.run '^$' -test.bench 'Floor/(floor|neardup-sign|ekzhu)$' \
	-test.benchtime 20x -test.count 3 -test.cpu 1 -test.v | grep -E 'corpus|CPU-ns'
PYTHONPATH=$peers /usr/bin/python3 datasketch_bench.py $data
uptime
