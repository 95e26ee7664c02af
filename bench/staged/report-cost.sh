#!/bin/bash
# report-cost.sh BIN NAME INPUT TASKS [FLAGS...]: one staged job (local
# executor, -j 2, -o, or --clusters with NOOUT=1) in $DIR/run-NAME, then
# one line: the load average before it, the CPU (user+sys) of all its
# tasks and the command's (usage.json, /usr/bin/time), and the CPU and
# largest peak RSS of the write, join and finish tasks. Give --report
# FILE among FLAGS to measure the report's cost (docs/benchmarks.md,
# "The staged job's --report").
bin=$1; name=$2; in=$3; tasks=$4; shift 4
dir=${DIR:-/tmp}
w=$dir/run-$name
rm -rf "$w" "$w-out" "$w-cl"; mkdir -p "$w"
load=$(cut -d' ' -f1-3 /proc/loadavg)
outs=(-o "$w-out"); [ -n "$NOOUT" ] && outs=(--clusters "$w-cl")
/usr/bin/time -f "%U %S %M" -o "$w.time" "$bin" dedup -q --executor local --tasks "$tasks" -j 2 --work "$w/work" "${outs[@]}" "$@" "$in" || exit 1
python3 - "$w/work/usage.json" "$name" "$load" "$w.time" <<'PY'
import json, sys
u = json.load(open(sys.argv[1])); t = open(sys.argv[4]).read().split()
cpu = sum(s['cpu_seconds'] for s in u['stages'])
st = {s['stage']: (round(s['cpu_seconds'], 2), round(s['largest_peak_rss_bytes'] / 2**20, 1)) for s in u['stages']}
print(sys.argv[2], "load", sys.argv[3], "tasks cpu %.2f" % cpu, "cmd cpu %.2f" % (float(t[0]) + float(t[1])),
      "write", st.get('write'), "join", st.get('join'), "finish", st.get('finish'))
PY
