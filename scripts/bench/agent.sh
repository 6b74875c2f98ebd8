#!/usr/bin/env bash
# Agent figures: cold start to all services healthy, idle RSS of the agent
# and its children (go test -bench in agent/e2e, medians), and the gateway's
# cost: wrk on GET /api/v1/version of the files service, direct vs through
# the gateway's path and Host routing, in one run.
# Usage: scripts/bench/agent.sh [duration=10s] [connections=32]
set -euo pipefail
DUR=${1:-10s}
CONNS=${2:-32}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
BASE=${BASE:-27400}
cleanup() { [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$ROOT"
echo "== go test -run '^\$' -bench . -benchtime 20x ./agent/e2e/"
go test -run '^$' -bench . -benchtime 20x ./agent/e2e/ | grep -E '^Benchmark'

command -v wrk >/dev/null || { echo "wrk is needed for the gateway figures: apt-get install -y wrk" >&2; exit 1; }
CGO_ENABLED=0 go build -o "$WORK/deckhand" ./agent/cmd/deckhand
"$WORK/deckhand" run --data "$WORK/data" --listen 127.0.0.1:$BASE --port-base $BASE --log-level error >/dev/null 2>&1 &
PID=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:$BASE/_/files/api/v1/version >/dev/null && break; sleep 0.05; done
FILES=$((BASE + 2))
echo "== direct: wrk -t2 -c$CONNS -d$DUR http://127.0.0.1:$FILES/api/v1/version"
wrk -t2 -c"$CONNS" -d"$DUR" http://127.0.0.1:$FILES/api/v1/version | grep -E 'Requests/sec|Latency'
echo "== gateway path: wrk -t2 -c$CONNS -d$DUR http://127.0.0.1:$BASE/_/files/api/v1/version"
wrk -t2 -c"$CONNS" -d"$DUR" http://127.0.0.1:$BASE/_/files/api/v1/version | grep -E 'Requests/sec|Latency|Non-2xx'
echo "== gateway Host: wrk -t2 -c$CONNS -d$DUR -H 'Host: p-c-files-1.srv.localhost' http://127.0.0.1:$BASE/api/v1/version"
wrk -t2 -c"$CONNS" -d"$DUR" -H 'Host: p-c-files-1.srv.localhost' http://127.0.0.1:$BASE/api/v1/version | grep -E 'Requests/sec|Latency|Non-2xx'
