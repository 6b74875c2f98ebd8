#!/usr/bin/env bash
# Transfers to AI credit per second on the real deckhand-control binary:
# wrk with 64 connections POSTs /api/v1/wallet/transfer-to-ai (1.00, a
# fresh idempotency key each, spread over USERS accounts), then
# `deckhand-control wallet verify` checks the ledger the run wrote.
#
# Usage: scripts/bench/wallet-transfer.sh [duration=10s] [connections=64] [stores=all] [users=8]
#   stores: bbolt | pg | all. "pg" and "all" start a private PostgreSQL
#   (Debian's postgresql package, fsync off) and measure one replica and
#   two replicas on one database (two wrk processes of connections/2).
set -euo pipefail
DUR=${1:-10s}
CONNS=${2:-64}
STORES=${3:-all}
USERS=${4:-8}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LUA="$ROOT/scripts/bench/wallet-transfer.lua"
WORK=$(mktemp -d)
chmod 755 "$WORK"
PORT=${PORT:-18281}
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

serve() {
  local name=$1 port=$2; shift 2
  "$WORK/deckhand-control" serve --listen 127.0.0.1:$port --data "$WORK/$name" --log-level error \
    --master-key-file "$WORK/master.key" --admin-email bench@example.com --admin-password 'Bench-pass-123' "$@" >/dev/null 2>"$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && return; sleep 0.1; done
  echo "server $name did not start:" >&2; cat "$WORK/$name.err" >&2; exit 1
}

tok() { sed -E 's/.*"token":"([^"]+)".*/\1/'; }

# users PORT: USERS accounts with 1,000,000.00 each; sets TOKENS.
users() {
  local b=http://127.0.0.1:$1 admin id t
  admin=$(curl -sf $b/api/v1/users/auth/login -d '{"email":"bench@example.com","password":"Bench-pass-123"}' | tok)
  TOKENS=""
  for i in $(seq "$USERS"); do
    id=$(curl -sf $b/api/v1/admin/users -H "authorization: Bearer $admin" \
      -d "{\"email\":\"u$i-$RANDOM@example.com\",\"password\":\"Bench-pass-123\",\"verified\":true}" | sed -E 's/.*"id":"([^"]+)".*/\1/')
    curl -sf $b/api/v1/admin/wallet/credit -H "authorization: Bearer $admin" \
      -d "{\"user_id\":\"$id\",\"amount\":\"1000000.00\",\"reason\":\"bench\"}" >/dev/null
    email=$(curl -sf $b/api/v1/admin/users/$id -H "authorization: Bearer $admin" | sed -E 's/.*"email":"([^"]+)".*/\1/')
    t=$(curl -sf $b/api/v1/users/auth/login -d "{\"email\":\"$email\",\"password\":\"Bench-pass-123\"}" | tok)
    TOKENS="$TOKENS${TOKENS:+,}$t"
  done
}

show() { grep -E 'Requests/sec|Latency  |^ +(50|99)%|Non-2xx'; }

one() {
  local label=$1 port=$2
  echo "== $label: wrk -t2 -c$CONNS -d$DUR --latency -s scripts/bench/wallet-transfer.lua ($USERS users)"
  TOKENS=$TOKENS RUN=$label-$RANDOM wrk -t2 -c"$CONNS" -d"$DUR" --latency -s "$LUA" http://127.0.0.1:$port | show
}

two() {
  local label=$1 pa=$2 pb=$3 half=$((CONNS / 2))
  echo "== $label: wrk -t1 -c$half -d$DUR --latency on A and on B at once ($USERS users)"
  TOKENS=$TOKENS RUN=a-$RANDOM wrk -t1 -c"$half" -d"$DUR" --latency -s "$LUA" http://127.0.0.1:$pa >"$WORK/wa" &
  local wa=$!
  TOKENS=$TOKENS RUN=b-$RANDOM wrk -t1 -c"$half" -d"$DUR" --latency -s "$LUA" http://127.0.0.1:$pb >"$WORK/wb"
  wait $wa
  echo "-- A"; show <"$WORK/wa"; echo "-- B"; show <"$WORK/wb"
  awk '/Requests\/sec/ {s += $2} END {printf "sum Requests/sec: %.2f\n", s}' "$WORK/wa" "$WORK/wb"
}

if [[ $STORES == bbolt || $STORES == all ]]; then
  serve bbolt $PORT
  users $PORT
  one bbolt $PORT
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
  "$WORK/deckhand-control" wallet verify --data "$WORK/bbolt"
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
  users $((PORT + 1))
  one "postgres 1 replica" $((PORT + 1))
  serve pgB $((PORT + 2)) --database-url "$URL"
  two "postgres 2 replicas" $((PORT + 1)) $((PORT + 2))
  "$WORK/deckhand-control" wallet verify --database-url "$URL"
fi
