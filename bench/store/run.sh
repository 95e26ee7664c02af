#!/bin/sh
# run.sh INDEX MODE [loadgen flags...]: serve a copy of INDEX (a Redis URL
# is served as it is, and changed), drive it with the load generator, and
# print the loadgen report plus the server's CPU time per request, its peak
# RSS, the index's memory and disk figures and the load average. See
# docs/bench/store.md.
#
# Environment: NEARDUP, LOADGEN (binaries), SERVE_FLAGS (extra serve
# flags), SERVERS=2 (two serve processes on a Redis index, the clients
# split between them; CPU is their sum), PROFILE=FILE (a CPU profile of
# the server over PROFILE_SECONDS, default 10, starting with the measured
# run), REDIS_PIDS="PID ..." (the redis-server processes: their CPU time
# over the measured run, per request and per document, is reported too).
set -eu
IDX=$1; MODE=$2; shift 2
T=${TMPDIR:-/tmp}/neardup-bench.$$
mkdir -p "$T"
PID=; PID2=
trap 'kill $PID $PID2 2>/dev/null || true; rm -rf "$T"' EXIT
case $IDX in
redis*) SRC=$IDX ;;
*) cp -r "$IDX" "$T/idx"; SRC=$T/idx ;;
esac
START=$(date +%s.%N)
${NEARDUP:-neardup} serve --index "$SRC" --addr 127.0.0.1:0 --addr-file "$T/addr" --debug-addr 127.0.0.1:0 ${SERVE_FLAGS:-} 2>"$T/log" &
PID=$!
while [ ! -s "$T/addr" ]; do sleep 0.05; done
echo "server ready in $(echo "$(date +%s.%N) - $START" | bc) s (opening the index and rebuilding its postings)"
ADDR="http://$(cat "$T/addr")"
if [ "${SERVERS:-1}" = 2 ]; then
	${NEARDUP:-neardup} serve --index "$SRC" --addr 127.0.0.1:0 --addr-file "$T/addr2" ${SERVE_FLAGS:-} 2>"$T/log2" &
	PID2=$!
	while [ ! -s "$T/addr2" ]; do sleep 0.05; done
	ADDR="$ADDR,http://$(cat "$T/addr2")"
fi
DEBUG=$(sed -n 's|profiler on \(http://[^/]*\)/.*|\1|p' "$T/log")
ticks() { for p in $PID $PID2; do awk '{print $14 + $15}' /proc/$p/stat; done | awk '{s += $1} END {print s}'; }
rticks() { for p in ${REDIS_PIDS:-}; do awk '{print $14 + $15}' /proc/$p/stat; done | awk '{s += $1} END {print s + 0}'; }
${LOADGEN:-loadgen} http -addr "$ADDR" -mode "$MODE" -warmup 0 "$@" >"$T/warm.json" -duration 2s
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
PROF=
if [ -n "${PROFILE:-}" ]; then
	curl -s "$DEBUG/debug/pprof/profile?seconds=${PROFILE_SECONDS:-10}" -o "$PROFILE" &
	PROF=$!
fi
T0=$(ticks)
R0=$(rticks)
/usr/bin/time -f "%U %S" -o "$T/lgtime" ${LOADGEN:-loadgen} http -addr "$ADDR" -mode "$MODE" -warmup 0 "$@" | tee "$T/rep.json"
T1=$(ticks)
R1=$(rticks)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$PROF" ] || wait $PROF
HZ=$(getconf CLK_TCK)
DOCS=$(sed -n 's/.*"documents": \([0-9]*\).*/\1/p' "$T/rep.json")
REQS=$(sed -n 's/.*"requests": \([0-9]*\).*/\1/p' "$T/rep.json")
awk -v t=$((T1 - T0)) -v rt=$((R1 - R0)) -v hz="$HZ" -v d="$DOCS" -v r="$REQS" -v lg="$(cat "$T/lgtime")" 'BEGIN {
	split(lg, u, " "); l = u[1] + u[2]
	printf "server CPU: %.1f s, %.0f us per request, %.0f us per document\n", t/hz, 1e6*t/hz/r, 1e6*t/hz/d
	printf "load generator CPU: %.1f s, %.0f us per request\n", l, 1e6*l/r
	if (rt > 0) printf "Redis CPU: %.1f s, %.0f us per request, %.0f us per document\n", rt/hz, 1e6*rt/hz/r, 1e6*rt/hz/d
	printf "2 dedicated cores would serve at most %.0f requests/s (server + load generator + Redis CPU)\n", 2/(t/hz/r + l/r + rt/hz/r) }'
grep VmHWM /proc/$PID/status
curl -s "${ADDR%%,*}/v1/stats" | tr ',' '\n' | grep -E '"(docs|disk_bytes|bytes_per_doc|postings_bytes|postings_bytes_per_doc|cache_bytes|memtable_bytes)"'
kill -TERM $PID $PID2; wait $PID $PID2 || true
