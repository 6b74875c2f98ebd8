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
PORT=${PORT:-18181}
source "$(dirname "$0")/control-lib.sh"

# tokens PORT: a session JWT and an svc_ token of the bench user.
tokens() {
  JWT=$(curl -sf http://127.0.0.1:$1/api/v1/users/auth/login -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"Bench-pass-123"}' | sed -E 's/.*"token":"([^"]+)".*/\1/')
  SVC=$(curl -sf http://127.0.0.1:$1/api/v1/auth/tokens -H "authorization: Bearer $JWT" -H 'content-type: application/json' \
    -d '{"alias":"bench"}' | sed -E 's/.*"token":"(svc_[^"]+)".*/\1/')
  curl -sf -o /dev/null -D - http://127.0.0.1:$1/api/v1/users/auth/me -H "authorization: Bearer $SVC" | grep -qi x-service-signature \
    || { echo "responses are not signed" >&2; exit 1; }
}

# pgstat: transactions committed and rows updated in the database so far
# (a credential cache that holds costs few; the counts lag by up to a second).
pgstat() {
  sleep 1
  echo "-- postgres so far: $(as_pg psql -h 127.0.0.1 -p $((PORT + 10)) -U postgres deckhand -Atc \
    "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = 'deckhand') || ' transactions, ' ||
            (SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables) || ' rows updated'")"
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
  local label=$1 pa=$2 pb=$3
  for kind in JWT SVC; do
    local tok=${!kind}
    echo "== $label $kind: wrk -t1 -c$((CONNS / 2)) -d$DUR --latency on A and on B at once"
    wrk_two http://127.0.0.1:$pa/api/v1/users/auth/me http://127.0.0.1:$pb/api/v1/users/auth/me -H "Authorization: Bearer $tok"
  done
}

if [[ $STORES == bbolt || $STORES == all ]]; then
  serve bbolt $PORT
  tokens $PORT
  echo "== bbolt baseline (no credential, signed 401): wrk -t2 -c$CONNS -d$DUR GET /api/v1/users/auth/me"
  wrk -t2 -c"$CONNS" -d"$DUR" http://127.0.0.1:$PORT/api/v1/users/auth/me | grep -E 'Requests/sec|Latency'
  one bbolt $PORT
  stop_last
fi

if [[ $STORES == pg || $STORES == all ]]; then
  start_pg
  serve pgA $((PORT + 1)) --database-url "$URL"
  tokens $((PORT + 1))
  one "postgres 1 replica" $((PORT + 1))
  pgstat
  serve pgB $((PORT + 2)) --database-url "$URL"
  two "postgres 2 replicas" $((PORT + 1)) $((PORT + 2))
  pgstat
fi
