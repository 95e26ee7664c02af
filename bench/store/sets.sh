#!/bin/sh
# sets.sh N: what keeping shingle sets costs an index (issue 27): bytes
# per document on disk (embedded, after a compaction) and in Redis
# (used_memory, minus the empty server's, per document), the build time,
# and check-and-add throughput and p99 through `neardup serve` (run.sh,
# 16 clients, 15 s), for the binary before ($OLD: every index estimate
# only) and after ($NEW: sets kept by default; its --estimate-only index
# too, embedded). docs/bench/store.md has the figures and the command.
#
# Environment: OLD, NEW, LOADGEN (binaries), PORT (a free port for the
# redis-server it starts, default 7471), SECONDS_RUN (default 15).
set -eu
N=${1:-200000}
T=${TMPDIR:-/tmp}/neardup-sets.$$
mkdir -p "$T"
RPID=
trap 'kill $RPID 2>/dev/null || true; rm -rf "$T"' EXIT
PORT=${PORT:-7471}
D=$(dirname "$0")
${LOADGEN:?} gen -n "$N" -dup 0.05 >"$T/docs.jsonl"
echo "documents: $N, $(wc -c <"$T/docs.jsonl") bytes of JSONL"
redis-server --port "$PORT" --save '' --appendonly no --dir "$T" --daemonize no >"$T/redis.log" 2>&1 &
RPID=$!
sleep 1
used() { redis-cli -p "$PORT" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
run() { # NAME BINARY INDEX [create flags]
	name=$1 bin=$2 idx=$3; shift 3
	base=0
	case $idx in redis*) redis-cli -p "$PORT" flushall >/dev/null; base=$(used) ;; esac
	"$bin" index create --index "$idx" "$@" 2>/dev/null
	s=$(date +%s.%N)
	"$bin" index add --index "$idx" -q "$T/docs.jsonl"
	e=$(date +%s.%N)
	case $idx in
	redis*) b=$(( $(used) - base )) ;;
	*) "$bin" index compact --index "$idx" 2>/dev/null; b=$("$bin" index stats --index "$idx" --json | sed -n 's/.*"disk_bytes": \([0-9]*\).*/\1/p') ;;
	esac
	echo "$name: build $(echo "$e - $s" | bc) s; $b bytes, $(echo "scale=1; $b / $N" | bc) bytes per document"
	NEARDUP=$bin sh "$D/run.sh" "$idx" check-and-add -conns 16 -duration "${SECONDS_RUN:-15}s" | grep -E '"(requests_per_second|p50_ms|p99_ms)"|server CPU|load average' | tr -s ' ' | tr '\n' ' '
	echo
}
run "old embedded" "${OLD:?}" "$T/old"
run "new embedded" "${NEW:?}" "$T/new"
run "new embedded --estimate-only" "$NEW" "$T/est" --estimate-only
run "old redis" "$OLD" "redis://127.0.0.1:$PORT/0?prefix=old"
run "new redis" "$NEW" "redis://127.0.0.1:$PORT/0?prefix=new"
