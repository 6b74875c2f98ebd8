#!/usr/bin/env bash
# `make docs`: renders every OpenAPI document deckhand serves — the control
# plane's and each container service's — to static HTML with Redoc.
#
#   scripts/docs.sh [OUT_DIR]     default docs/reference/html
#
# The documents come from the built binaries (DECKHAND_BIN, default ./bin):
# a control plane and an agent are started on a temporary data dir and
# loopback ports (DOCS_PORT_BASE: the agent's base, its services at +1..+16,
# the control plane at +17; default a free range), each document is fetched
# (OUT_DIR/openapi/NAME.json), both are stopped, and docs/reference/render.mjs
# writes OUT_DIR/NAME.html, OUT_DIR/index.html and redoc.standalone.js.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${1:-docs/reference/html}
BIN=${DECKHAND_BIN:-./bin}
for c in curl jq node; do
  command -v "$c" >/dev/null || { echo "docs.sh: $c is missing; run scripts/setup.sh" >&2; exit 1; }
done
[[ -d docs/reference/node_modules/redoc ]] || { echo "docs.sh: Redoc is not installed; run scripts/setup.sh (npm ci in docs/reference)" >&2; exit 1; }

free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=${DOCS_PORT_BASE:-}
if [[ -z "$base" ]]; then
  for _ in $(seq 50); do
    b=$((20000 + RANDOM % 10000)) ok=1
    for off in $(seq 0 17); do free $((b + off)) || { ok=""; break; }; done
    [[ -n "$ok" ]] && { base=$b; break; }
  done
  [[ -n "$base" ]] || { echo "docs.sh: no free port range" >&2; exit 1; }
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

up() { # url pid log
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "docs.sh: $1 did not answer:" >&2
  tail -n 20 "$3" >&2
  exit 1
}

control=127.0.0.1:$((base + 17))
"$BIN/deckhand-control" serve --data "$tmp/control" --listen "$control" --log-level warn >"$tmp/control.log" 2>&1 &
pids+=($!)
up "http://$control/openapi.json" "$!" "$tmp/control.log"
"$BIN/deckhand" run --data "$tmp/agent" --listen "127.0.0.1:$base" --port-base "$base" --log-level warn \
  --files-root "$tmp" --display "" >"$tmp/agent.log" 2>&1 &
pids+=($!)
up "http://127.0.0.1:$base/_/cron/health" "$!" "$tmp/agent.log"

rm -rf "$OUT"
mkdir -p "$OUT/openapi"
curl -fsS "http://$control/openapi.json" -o "$OUT/openapi/control.json"
# cron answering does not mean every service is up yet: status fails
# while one is still starting, so ask again for up to 10 s.
for i in $(seq 100); do
  "$BIN/deckhand" status --listen "127.0.0.1:$base" -o json >"$tmp/status.json" 2>"$tmp/status.err" && break
  [[ $i == 100 ]] && { echo "docs.sh: the agent's services did not all start:" >&2; cat "$tmp/status.err" >&2; tail -n 20 "$tmp/agent.log" >&2; exit 1; }
  sleep 0.1
done
jq -r '.services[] | "\(.name) \(.url)"' "$tmp/status.json" |
  while read -r name url; do
    curl -fsS "$url/openapi.json" -o "$OUT/openapi/$name.json"
  done
cleanup
trap - EXIT

out_abs=$(cd "$OUT" && pwd)
cd docs/reference && node render.mjs "$out_abs/openapi" "$out_abs"
echo "docs: $(ls "$out_abs"/openapi | wc -l) documents rendered; open $OUT/index.html" >&2
