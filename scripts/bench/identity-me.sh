#!/usr/bin/env bash
# Throughput of authenticated, signed GET /api/v1/users/auth/me on the real
# deckhand-control binary, with a session JWT and with an svc_ auth token.
#
# Usage: scripts/bench/identity-me.sh [duration=10s] [connections=64] [stores=bbolt]
#   stores: bbolt | pg | all. "pg" and "all" start a private PostgreSQL
#   (Debian's postgresql package, fsync off) and also measure one replica on
#   it and two replicas on one database, each half of the connections
#   (two wrk -t1 processes of connections/2, side by side; the sum is shown).
set -euo pipefail
DUR=${1:-10s}
CONNS=${2:-64}
STORES=${3:-bbolt}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
chmod 755 "$WORK"
PORT=${PORT:-18181}
PIDS=()
PGDATA_DIR=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [[ -n "$PGDATA_DIR" ]] && { as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast stop >/dev/null 2>&1 || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT
command -v wrk >/dev/null || { echo "wrk is needed: scripts/setup.sh --bench (apt-get install -y wrk)" >&2; exit 1; }
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$WORK/deckhand-control" ./control/cmd/deckhand-control)
head -c 32 /dev/urandom | base64 >"$WORK/master.key"; chmod 600 "$WORK/master.key"

as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# serve NAME PORT [flags...]: start a server, wait for /health.
serve() {
  local name=$1 port=$2; shift 2
  "$WORK/deckhand-control" serve --listen 127.0.0.1:$port --data "$WORK/$name" --log-level error \
    --master-key-file "$WORK/master.key" --admin-email bench@example.com --admin-password 'Bench-pass-123' "$@" >/dev/null 2>"$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && return; sleep 0.1; done
  echo "server $name did not start:" >&2; cat "$WORK/$name.err" >&2; exit 1
}

# tokens PORT: a session JWT and an svc_ token of the bench user.
tokens() {
  JWT=$(curl -sf http://127.0.0.1:$1/api/v1/users/auth/login -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"Bench-pass-123"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')
  SVC=$(curl -sf http://127.0.0.1:$1/api/v1/auth/tokens -H "authorization: Bearer $JWT" -H 'content-type: application/json' \
    -d '{"alias":"bench"}' | sed -E 's/.*"token":"(svc_[^"]+)".*/\1/')
  curl -sf -o /dev/null -D - http://127.0.0.1:$1/api/v1/users/auth/me -H "authorization: Bearer $SVC" | grep -qi x-service-signature \
    || { echo "responses are not signed" >&2; exit 1; }
}

show() { grep -E 'Requests/sec|Latency  |^ +99%|Non-2xx'; }

# one LABEL PORT: wrk against one server, with each credential.
one() {
  local label=$1 port=$2
  for kind in JWT SVC; do
    local tok=${!kind}
    echo "== $label $kind: wrk -t2 -c$CONNS -d$DUR --latency GET /api/v1/users/auth/me"
    wrk -t2 -c"$CONNS" -d"$DUR" --latency -H "Authorization: Bearer $tok" http://127.0.0.1:$port/api/v1/users/auth/me | show
  done
}

# two LABEL PORT_A PORT_B: two wrk processes at once, half the connections each.
two() {
  local label=$1 pa=$2 pb=$3 half=$((CONNS / 2))
  for kind in JWT SVC; do
    local tok=${!kind}
    echo "== $label $kind: wrk -t1 -c$half -d$DUR --latency on A and on B at once"
    wrk -t1 -c"$half" -d"$DUR" --latency -H "Authorization: Bearer $tok" http://127.0.0.1:$pa/api/v1/users/auth/me >"$WORK/wa" &
    local wa=$!
    wrk -t1 -c"$half" -d"$DUR" --latency -H "Authorization: Bearer $tok" http://127.0.0.1:$pb/api/v1/users/auth/me >"$WORK/wb"
    wait $wa
    echo "-- A"; show <"$WORK/wa"; echo "-- B"; show <"$WORK/wb"
    awk '/Requests\/sec/ {s += $2} END {printf "sum Requests/sec: %.2f\n", s}' "$WORK/wa" "$WORK/wb"
  done
}

if [[ $STORES == bbolt || $STORES == all ]]; then
  serve bbolt $PORT
  tokens $PORT
  echo "== bbolt baseline (no credential, signed 401): wrk -t2 -c$CONNS -d$DUR GET /api/v1/users/auth/me"
  wrk -t2 -c"$CONNS" -d"$DUR" http://127.0.0.1:$PORT/api/v1/users/auth/me | grep -E 'Requests/sec|Latency'
  one bbolt $PORT
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
fi

if [[ $STORES == pg || $STORES == all ]]; then
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PGPORT=$((PORT + 10))
  PGDATA_DIR="$WORK/pg"
  mkdir -p "$PGDATA_DIR" && [[ $(id -u) == 0 ]] && chown postgres "$PGDATA_DIR"
  as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -w -l "$PGDATA_DIR/log" \
    -o "-p $PGPORT -k $PGDATA_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
  as_pg "$PGBIN/createdb" -h 127.0.0.1 -p $PGPORT -U postgres deckhand
  URL="postgres://postgres@127.0.0.1:$PGPORT/deckhand?sslmode=disable"
  serve pgA $((PORT + 1)) --database-url "$URL"
  tokens $((PORT + 1))
  one "postgres 1 replica" $((PORT + 1))
  serve pgB $((PORT + 2)) --database-url "$URL"
  two "postgres 2 replicas" $((PORT + 1)) $((PORT + 2))
fi
