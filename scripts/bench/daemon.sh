#!/usr/bin/env bash
# Program daemon: restart latency of a crashed program, deckhand's daemon
# service against supervisord (Debian's supervisor package), in one run and
# at the same time (same machine load for both).
#
# The program (bash, no forks for its clock) writes "start <t>" when it
# starts, stays up 1.2 s (past both supervisors' 1 s start time, so the
# exit is a crash of a running program, restarted at once) and writes
# "crash <t>" just before exit 1. Latency = next start - crash: detecting
# the exit, deciding, forking and exec'ing bash. Medians of N restarts.
# Usage: scripts/bench/daemon.sh [restarts=25]
set -euo pipefail
N=${1:-25}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
command -v supervisord >/dev/null || { echo "supervisord is needed: scripts/setup.sh --bench (Debian package supervisor)" >&2; exit 1; }
cd "$ROOT"
CGO_ENABLED=0 go build -o "$WORK/deckhand" ./agent/cmd/deckhand

cat >"$WORK/crash.sh" <<'SH'
#!/bin/bash
echo "start $EPOCHREALTIME" >>"$1"
sleep 1.2
echo "crash $EPOCHREALTIME" >>"$1"
exit 1
SH
chmod +x "$WORK/crash.sh"

# deckhand: the daemon service alone, the program as a file.
mkdir -p "$WORK/dh/daemon/programs"
printf '{"command": "%s", "args": ["%s"], "restart": "always", "start_seconds": 1}\n' \
  "$WORK/crash.sh" "$WORK/deckhand.log" >"$WORK/dh/daemon/programs/crash.json"
"$WORK/deckhand" service daemon --data "$WORK/dh" --listen 127.0.0.1:0 --log-level error >/dev/null 2>&1 &
PIDS+=($!)

# supervisord: the same program, autorestart, startsecs=1.
cat >"$WORK/supervisord.conf" <<CONF
[supervisord]
nodaemon=true
logfile=$WORK/supervisord.log
pidfile=$WORK/supervisord.pid
[unix_http_server]
file=$WORK/supervisor.sock
[program:crash]
command=$WORK/crash.sh $WORK/supervisord-prog.log
autorestart=true
startsecs=1
startretries=3
stdout_logfile=NONE
stderr_logfile=NONE
CONF
supervisord -c "$WORK/supervisord.conf" >/dev/null 2>&1 &
PIDS+=($!)

echo "== $N restarts of a crashing program each ($(supervisord --version) vs deckhand $(git describe --always --dirty 2>/dev/null))"
for _ in $(seq 600); do
  a=$(grep -c '^start' "$WORK/deckhand.log" 2>/dev/null || true)
  b=$(grep -c '^start' "$WORK/supervisord-prog.log" 2>/dev/null || true)
  [[ ${a:-0} -gt $N && ${b:-0} -gt $N ]] && break
  sleep 0.5
done

# latencies prints each restart latency in ms (crash line, then start line).
latencies() { awk '$1=="crash"{c=$2} $1=="start"&&c!=""{printf "%.3f\n", ($2-c)*1000; c=""}' "$1" | head -n "$N"; }
median() { sort -n | awk '{v[NR]=$1} END{if(NR==0){print "nan"; exit} if(NR%2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
d=$(latencies "$WORK/deckhand.log" | median)
s=$(latencies "$WORK/supervisord-prog.log" | median)
nd=$(latencies "$WORK/deckhand.log" | wc -l)
ns=$(latencies "$WORK/supervisord-prog.log" | wc -l)
printf 'deckhand daemon   restart latency median %8.3f ms  (%d restarts)\n' "$d" "$nd"
printf 'supervisord       restart latency median %8.3f ms  (%d restarts)\n' "$s" "$ns"
awk -v d="$d" -v s="$s" 'BEGIN{printf "ratio supervisord/deckhand: %.1fx\n", s/d}'
