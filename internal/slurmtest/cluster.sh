#!/usr/bin/env bash
# A real Slurm cluster on this machine, for tests and for trying the Slurm
# executor by hand: munged, slurmctld and two slurmd nodes (n1 and n2, each
# `slurmd -N NAME` on its own loopback port), all under one state folder
# with a generated slurm.conf. Nothing outside the folder is read or written
# (no /etc/slurm, no /etc/munge, no systemd), so several clusters (one per
# test package) can run side by side.
#
#   cluster.sh up   [DIR]   start it (or find it running), then print
#                           `export SLURM_CONF=DIR/slurm.conf`
#   cluster.sh down [DIR]   cancel its jobs and stop its daemons
#   cluster.sh status [DIR] exit 0 when it answers, 1 when not
#
# DIR defaults to $NEARDUP_SLURM_DIR, else /tmp/neardup-slurm. Both commands
# are idempotent. With NEARDUP_SLURM_OWNER=PID, up leaves a watcher that
# brings the cluster down when process PID ends or DIR goes (a test binary
# killed by its timeout leaves no daemons behind). Ports: NEARDUP_SLURM_PORTS="CTLD N1 N2" picks them, else
# three free loopback ports are chosen once and kept in DIR/ports.
#
# Choices, all so that it runs as root in a bare container without systemd
# or cgroups: SlurmUser=root; proctrack/linuxproc, task/none,
# jobacct_gather/none; no accounting database (accounting_storage/none), so
# no sacct: finished jobs stay visible to squeue and scontrol for MinJobAge
# (600 s), and jobcomp/filetxt appends a line per finished job to
# DIR/jobcomp.log; each node claims 2 CPUs and the machine's memory
# whatever it really has (SlurmdParameters=config_overrides).
#
# The Debian packages: slurmctld slurmd slurm-client munge (22.05 on
# bookworm). internal/slurmtest embeds this file; scripts/slurm-up and
# scripts/slurm-down call it.
set -euo pipefail

usage() { echo "usage: $0 up|down|status [DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
action=$1
dir=${2:-${NEARDUP_SLURM_DIR:-/tmp/neardup-slurm}}
PATH=$PATH:/usr/sbin:/sbin

die() { echo "slurm-up: $*" >&2; exit 1; }

# tail_logs prints the end of every daemon log, for a failed start.
tail_logs() {
  for f in "$dir"/munge/munged.log "$dir"/slurmctld.log "$dir"/slurmd-n1.log "$dir"/slurmd-n2.log; do
    [ -f "$f" ] || continue
    echo "--- $f" >&2
    tail -n 15 "$f" >&2
  done
}

# alive PIDFILE: the process named in PIDFILE runs.
alive() {
  [ -s "$1" ] || return 1
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# stop PIDFILE...: TERM the processes named in the PIDFILEs, all at once
# (each takes about 2 s to go), then KILL those left after 10 s.
stop() {
  local f pids="" pid
  for f in "$@"; do
    alive "$f" && pids="$pids $(cat "$f")"
  done
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 200); do
    local left=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && left="$left $pid"; done
    pids=$left
    [ -z "$pids" ] && break
    sleep 0.05
  done
  for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -f "$@"
}

running() {
  [ -f "$dir/slurm.conf" ] || return 1
  alive "$dir/munge/munged.pid" && alive "$dir/slurmctld.pid" &&
    alive "$dir/slurmd-n1.pid" && alive "$dir/slurmd-n2.pid" &&
    SLURM_CONF="$dir/slurm.conf" timeout 10 scontrol ping 2>/dev/null | grep -q UP
}

# freeport prints a loopback TCP port nothing listens on, not in $taken.
taken=""
freeport() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 40000))
    case " $taken " in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      taken="$taken $p"
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

down() {
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/slurm.conf" ] && alive "$dir/slurmctld.pid"; then
    # Cancel this cluster's jobs (and so their slurmstepd) before the
    # daemons go, and give the nodes a moment to clean up.
    SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --full --quiet --user=root 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(SLURM_CONF="$dir/slurm.conf" timeout 5 squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  stop "$dir/slurmd-n1.pid" "$dir/slurmd-n2.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"
}

up() {
  for b in munged mungekey munge slurmctld slurmd slurmstepd sbatch squeue scontrol scancel sinfo; do
    command -v "$b" >/dev/null || die "$b not found: install the Debian packages slurmctld slurmd slurm-client munge"
  done
  mkdir -p "$dir"
  chmod 700 "$dir"
  dir=$(cd "$dir" && pwd)
  if running; then
    echo "export SLURM_CONF=$dir/slurm.conf"
    return 0
  fi
  down # whatever half of it still runs

  mkdir -p "$dir/munge" "$dir/ctld" "$dir/spool"
  chmod 700 "$dir/munge"
  if [ ! -s "$dir/munge/munge.key" ]; then
    mungekey --create --keyfile="$dir/munge/munge.key" --force
  fi
  chmod 600 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" --num-threads=4 ||
    { tail_logs; die "munged did not start"; }
  for _ in $(seq 100); do
    munge -n -S "$dir/munge/munge.socket" 2>/dev/null | unmunge -S "$dir/munge/munge.socket" >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n -S "$dir/munge/munge.socket" | unmunge -S "$dir/munge/munge.socket" >/dev/null ||
    { tail_logs; die "munged does not answer on $dir/munge/munge.socket"; }

  if [ ! -s "$dir/ports" ]; then
    if [ -n "${NEARDUP_SLURM_PORTS:-}" ]; then
      echo "$NEARDUP_SLURM_PORTS" >"$dir/ports"
    else
      echo "$(freeport) $(freeport) $(freeport)" >"$dir/ports"
    fi
  fi
  read -r pctld pn1 pn2 <"$dir/ports"
  host=$(hostname -s 2>/dev/null || cut -d. -f1 /proc/sys/kernel/hostname)
  mem=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
  cat >"$dir/slurm.conf" <<EOF
# Generated by internal/slurmtest/cluster.sh: a test cluster of two nodes
# on one machine. Do not use in production.
ClusterName=neardup
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$pctld
SlurmdPort=$pn1
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,sched_min_interval=100000,bf_interval=1
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
SlurmdTimeout=60
MaxArraySize=10001
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$pn1 CPUs=2 RealMemory=$mem State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$pn2 CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"

  slurmctld -f "$SLURM_CONF" || { tail_logs; die "slurmctld did not start"; }
  for _ in $(seq 200); do
    timeout 5 scontrol ping 2>/dev/null | grep -q UP && break
    sleep 0.1
  done
  timeout 5 scontrol ping 2>/dev/null | grep -q UP || { tail_logs; die "slurmctld does not answer on port $pctld"; }

  for n in n1 n2; do
    slurmd -N "$n" -f "$SLURM_CONF" || { tail_logs; die "slurmd -N $n did not start"; }
  done
  for _ in $(seq 300); do
    states=$(timeout 5 sinfo -h -N -n n1,n2 -o %T 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$states" = "idle " ] && break
    sleep 0.1
  done
  [ "$states" = "idle " ] || { tail_logs; die "nodes n1 and n2 not idle after 30 s (states: $states)"; }
  if [ -n "${NEARDUP_SLURM_OWNER:-}" ]; then
    setsid bash "$0" watch "$dir" "$NEARDUP_SLURM_OWNER" </dev/null >/dev/null 2>&1 &
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

# watch DIR PID: wait until PID ends or DIR/slurm.conf goes, then down.
watch() {
  while kill -0 "$1" 2>/dev/null && [ -f "$dir/slurm.conf" ]; do
    sleep 1
  done
  down
}

case "$action" in
up) up ;;
down) down ;;
status) running ;;
watch) watch "${3:?usage: $0 watch DIR PID}" ;;
*) usage ;;
esac
