#!/usr/bin/env bash
# Throughput of authenticated, signed GET /api/v1/users/auth/me on the real
# deckhand-control binary, with a session JWT and with an svc_ auth token.
# Usage: scripts/bench/identity-me.sh [duration=10s] [connections=64]
set -euo pipefail
DUR=${1:-10s}
CONNS=${2:-64}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
PORT=${PORT:-18181}
cleanup() { [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install -y wrk" >&2; exit 1; }
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/deckhand-control" ./control/cmd/deckhand-control)
"$WORK/deckhand-control" serve --listen 127.0.0.1:$PORT --data "$WORK/data" --log-level error \
  --admin-email bench@example.com --admin-password 'Bench-pass-123' >/dev/null 2>&1 &
PID=$!
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/health >/dev/null && break; sleep 0.1; done
JWT=$(curl -sf http://127.0.0.1:$PORT/api/v1/users/auth/login -H 'content-type: application/json' \
  -d '{"email":"bench@example.com","password":"Bench-pass-123"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')
SVC=$(curl -sf http://127.0.0.1:$PORT/api/v1/auth/tokens -H "authorization: Bearer $JWT" -H 'content-type: application/json' \
  -d '{"alias":"bench"}' | sed -E 's/.*"token":"(svc_[^"]+)".*/\1/')
curl -sf -o /dev/null -D - http://127.0.0.1:$PORT/api/v1/users/auth/me -H "authorization: Bearer $SVC" | grep -qi x-service-signature \
  || { echo "responses are not signed" >&2; exit 1; }
echo "== baseline (no credential, signed 401): wrk -t2 -c$CONNS -d$DUR GET /api/v1/users/auth/me"
wrk -t2 -c"$CONNS" -d"$DUR" http://127.0.0.1:$PORT/api/v1/users/auth/me | grep -E 'Requests/sec|Latency'
for kind in JWT SVC; do
  tok=${!kind}
  echo "== $kind: wrk -t2 -c$CONNS -d$DUR GET /api/v1/users/auth/me"
  wrk -t2 -c"$CONNS" -d"$DUR" -H "Authorization: Bearer $tok" http://127.0.0.1:$PORT/api/v1/users/auth/me | grep -E 'Requests/sec|Latency|Non-2xx'
done
