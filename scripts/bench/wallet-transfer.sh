#!/usr/bin/env bash
# Transfers to AI credit per second on the real deckhand-control binary:
# wrk with 64 connections POSTs /api/v1/wallet/transfer-to-ai (1.00, a
# fresh idempotency key each, spread over USERS accounts), then
# `deckhand-control wallet verify` checks the ledger the run wrote.
#
# Usage: scripts/bench/wallet-transfer.sh [duration=10s] [connections=64] [stores=all] [users=8]
#   stores: bbolt | pg | all. "pg" and "all" start a private PostgreSQL
#   (Debian's postgresql package, fsync off) and measure one replica and
#   two replicas on one database (two wrk processes of connections/2),
#   then PostgreSQL's own `pgbench -b tpcb-like` with as many clients on
#   the same server (a database of its own, scale USERS: one branch per
#   account), the peer a transfer is compared against.
set -euo pipefail
DUR=${1:-10s}
CONNS=${2:-64}
STORES=${3:-all}
USERS=${4:-8}
PORT=${PORT:-18281}
source "$(dirname "$0")/control-lib.sh"
LUA="$ROOT/scripts/bench/wallet-transfer.lua"

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
  local label=$1 pa=$2 pb=$3
  echo "== $label: wrk -t1 -c$((CONNS / 2)) -d$DUR --latency on A and on B at once ($USERS users)"
  export TOKENS; wrk_two http://127.0.0.1:$pa http://127.0.0.1:$pb -s "$LUA"
}

if [[ $STORES == bbolt || $STORES == all ]]; then
  serve bbolt $PORT
  users $PORT
  one bbolt $PORT
  stop_last
  "$WORK/deckhand-control" wallet verify --data "$WORK/bbolt"
fi

if [[ $STORES == pg || $STORES == all ]]; then
  start_pg
  serve pgA $((PORT + 1)) --database-url "$URL"
  users $((PORT + 1))
  one "postgres 1 replica" $((PORT + 1))
  serve pgB $((PORT + 2)) --database-url "$URL"
  two "postgres 2 replicas" $((PORT + 1)) $((PORT + 2))
  "$WORK/deckhand-control" wallet verify --database-url "$URL"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  pgb="-h 127.0.0.1 -p $((PORT + 10)) -U postgres"
  as_pg "$PGBIN/createdb" $pgb pgbench
  pgbench $pgb -i -q -s "$USERS" pgbench >/dev/null 2>&1
  echo "== pgbench -b tpcb-like -c $CONNS -j 2 -T ${DUR%s} (scale $USERS) on the same PostgreSQL"
  pgbench $pgb -b tpcb-like -c "$CONNS" -j 2 -T "${DUR%s}" pgbench 2>/dev/null | grep -E '^(tps|latency average|number of failed)'
fi
