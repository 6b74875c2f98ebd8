# Shared by the control-plane benchmarks (identity-me.sh, wallet-transfer.sh):
# a work directory cleaned up on exit, the deckhand-control binary built
# into it with a master key, servers started and waited for, a private
# PostgreSQL (Debian's postgresql package, fsync off), and two wrk
# processes side by side with their requests summed.
#
# Source it after setting DUR, CONNS and PORT; it sets ROOT, WORK, PIDS.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d)
chmod 755 "$WORK"
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

# stop_last: stop the server started last.
stop_last() { kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; }

# start_pg: a private PostgreSQL on PORT+10 with database deckhand; sets URL.
start_pg() {
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  local pgport=$((PORT + 10))
  PGDATA_DIR="$WORK/pg"
  mkdir -p "$PGDATA_DIR" && [[ $(id -u) == 0 ]] && chown postgres "$PGDATA_DIR"
  as_pg "$PGBIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -w -l "$PGDATA_DIR/log" \
    -o "-p $pgport -k $PGDATA_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
  as_pg "$PGBIN/createdb" -h 127.0.0.1 -p $pgport -U postgres deckhand
  URL="postgres://postgres@127.0.0.1:$pgport/deckhand?sslmode=disable"
}

# wrk_two URL_A URL_B [wrk flags...]: two `wrk -t1 -c$((CONNS/2)) -d$DUR
# --latency` at once, one per URL (RUN differs between them, for scripts
# that need distinct keys); prints each through show and the summed rate.
wrk_two() {
  local ua=$1 ub=$2 half=$((CONNS / 2)); shift 2
  RUN=a-$RANDOM wrk -t1 -c"$half" -d"$DUR" --latency "$@" "$ua" >"$WORK/wa" &
  local wa=$!
  RUN=b-$RANDOM wrk -t1 -c"$half" -d"$DUR" --latency "$@" "$ub" >"$WORK/wb"
  wait $wa
  echo "-- A"; show <"$WORK/wa"; echo "-- B"; show <"$WORK/wb"
  awk '/Requests\/sec/ {s += $2} END {printf "sum Requests/sec: %.2f\n", s}' "$WORK/wa" "$WORK/wb"
}
