#!/usr/bin/env bash
# write-memory.sh BIN [ROUTE]: the server's memory for three large batch
# writes on a Redis index (docs/reliability.md, "Memory under a flood").
# A fresh redis-server and index, `BIN serve` on it with
# GODEBUG=gctrace=1, three 31 MiB bodies of 10,000 new documents each
# (3.2 KB texts of random words of a 50,000-word vocabulary, a different
# tag per body) posted one at a time to ROUTE (default
# batch/check-and-add); prints the server's RSS at start and at its peak
# (VmHWM), the largest live heap of a garbage collection after the start,
# the server's CPU (user + sys) and a hash of the answers. Needs
# redis-server, redis-cli, curl and python3; scratch under $TMPDIR.
set -euo pipefail
BIN=$(realpath "$1")
ROUTE=${2:-batch/check-and-add}
D=$(mktemp -d)
trap 'kill $SPID $RPID 2>/dev/null || true; rm -rf "$D"' EXIT
SPID= RPID=
python3 - "$D" <<'PY'
import json, random, sys
for b, tag in enumerate(["aaa", "baa", "caa"], 1):
    r = random.Random(b)
    docs = []
    for i in range(10000):
        words, n = [], 0
        while n < 3250 - 40:
            w = "%s%d" % (tag, r.randrange(50000))
            words.append(w)
            n += len(w) + 1
        docs.append({"id": "%sf%d" % (tag, i), "text": " ".join(words) + " "})
    with open("%s/body%d.json" % (sys.argv[1], b), "w") as f:
        json.dump({"documents": docs}, f)
PY
PORT=$((20000 + RANDOM % 20000))
redis-server --port $PORT --save "" --appendonly no --dir "$D" >"$D/redis.log" 2>&1 &
RPID=$!
for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
URL="redis://127.0.0.1:$PORT/0?prefix=m"
"$BIN" index create --index "$URL" >/dev/null 2>&1
GODEBUG=gctrace=1 "$BIN" serve --index "$URL" --addr 127.0.0.1:0 --addr-file "$D/addr" --timeout 120s 2>"$D/serve.err" &
SPID=$!
for _ in $(seq 100); do [ -s "$D/addr" ] && break; sleep 0.1; done
sleep 1
BASE=$(awk '/VmHWM/{print $2}' /proc/$SPID/status)
SKIP=$(grep -c '^gc ' "$D/serve.err" || true)
for b in 1 2 3; do
	curl -sf -o "$D/out$b.json" -H 'Content-Type: application/json' --data-binary @"$D/body$b.json" "http://$(cat "$D/addr")/v1/$ROUTE"
done
PEAK=$(awk '/VmHWM/{print $2}' /proc/$SPID/status)
read -r UT ST < <(awk '{print $14, $15}' /proc/$SPID/stat)
LIVE=$(grep '^gc ' "$D/serve.err" | tail -n +$((SKIP + 1)) | sed -E 's/.* ([0-9]+)->([0-9]+)->([0-9]+) MB, .*/\3/' | sort -n | tail -1)
echo "$ROUTE: RSS $((BASE / 1024)) MiB at start, peak $((PEAK / 1024)) MiB (growth $(((PEAK - BASE) / 1024)) MiB); largest live heap $LIVE MiB; CPU $(((UT + ST) * 10)) ms; answers $(cat "$D"/out*.json | md5sum | cut -c1-8)"
