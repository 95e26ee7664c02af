#!/bin/sh
# crashtest.sh: kill -9 the real neardup server binary during a stream of
# adds, restart it, and check that every acknowledged document is there.
# Usage: scripts/crashtest.sh [seconds-before-kill] (default 3). Needs go.
# (The same check runs in `go test ./internal/cli -run TestServeKill9`.)
set -eu
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'kill -9 $SERVER 2>/dev/null || true; rm -rf "$T"' EXIT
go build -o "$T/neardup" ./cmd/neardup
go build -o "$T/loadgen" ./bench/store
"$T/neardup" index create --index "$T/idx"

start() {
	rm -f "$T/addr"
	"$T/neardup" serve --index "$T/idx" --addr 127.0.0.1:0 --addr-file "$T/addr" 2>>"$T/server.log" &
	SERVER=$!
	i=0
	while [ ! -s "$T/addr" ]; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "server did not start"; cat "$T/server.log"; exit 1; }
		sleep 0.1
	done
	ADDR="http://$(cat "$T/addr")"
}

start
"$T/loadgen" http -addr "$ADDR" -mode add -conns 16 -warmup 0 -duration 60s -max-errors 1 -ack-log "$T/acked.txt" >"$T/load.json" 2>&1 &
LOAD=$!
"$T/loadgen" http -addr "$ADDR" -mode batch -batch 20 -conns 2 -warmup 0 -duration 60s -max-errors 1 -seed 7 -ack-log "$T/acked.txt" >"$T/load2.json" 2>&1 &
LOAD2=$!
sleep "${1:-3}"
kill -9 $SERVER
wait $SERVER 2>/dev/null || true
wait $LOAD $LOAD2 || true
echo "killed the server with SIGKILL after $(wc -l <"$T/acked.txt") acknowledged adds"

start
"$T/loadgen" verify -addr "$ADDR" -ids "$T/acked.txt"
kill -TERM $SERVER
wait $SERVER
grep -q "flushed and closed" "$T/server.log"
echo "crash test passed"
