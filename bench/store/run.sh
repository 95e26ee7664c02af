#!/bin/sh
# run.sh INDEX MODE [loadgen flags...]: serve a copy of INDEX, drive it with
# the load generator, and print the loadgen report plus the server's CPU
# time per request and its peak RSS. See docs/bench/store.md.
set -eu
IDX=$1; MODE=$2; shift 2
T=${TMPDIR:-/tmp}/neardup-bench.$$
mkdir -p "$T"
trap 'kill $PID 2>/dev/null || true; rm -rf "$T"' EXIT
cp -r "$IDX" "$T/idx"
${NEARDUP:-neardup} serve --index "$T/idx" --addr 127.0.0.1:0 --addr-file "$T/addr" ${SERVE_FLAGS:-} 2>"$T/log" &
PID=$!
while [ ! -s "$T/addr" ]; do sleep 0.1; done
ticks() { awk '{print $14 + $15}' /proc/$PID/stat; }
${LOADGEN:-loadgen} http -addr "http://$(cat "$T/addr")" -mode "$MODE" -warmup 0 "$@" >"$T/warm.json" -duration 2s
T0=$(ticks)
${LOADGEN:-loadgen} http -addr "http://$(cat "$T/addr")" -mode "$MODE" -warmup 0 "$@" | tee "$T/rep.json"
T1=$(ticks)
HZ=$(getconf CLK_TCK)
DOCS=$(sed -n 's/.*"documents": \([0-9]*\).*/\1/p' "$T/rep.json")
REQS=$(sed -n 's/.*"requests": \([0-9]*\).*/\1/p' "$T/rep.json")
awk -v t=$((T1 - T0)) -v hz="$HZ" -v d="$DOCS" -v r="$REQS" 'BEGIN {
	printf "server CPU: %.1f s, %.0f us per request, %.0f us per document\n", t/hz, 1e6*t/hz/r, 1e6*t/hz/d }'
grep VmHWM /proc/$PID/status
kill -TERM $PID; wait $PID || true
