#!/usr/bin/env bash
# First load of the web console (issue 29): bytes transferred for the
# first page and time to an interactive page in headless Chromium on
# loopback, against bin/deckhand-control (make build builds the console).
#
# Usage: scripts/bench/console.sh [runs=10]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-10}
PORT=${PORT:-18191}
WORK=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
[[ -x "$ROOT/bin/deckhand-control" ]] || { echo "run make build first" >&2; exit 1; }
"$ROOT/bin/deckhand-control" serve --listen 127.0.0.1:$PORT --data "$WORK" --log-level error >/dev/null 2>"$WORK/err" &
PID=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/health >/dev/null && break; sleep 0.1; done
echo "-- gzip sizes of the first page's files"
for f in $(curl -s http://127.0.0.1:$PORT/login | grep -oE '/assets/[^"]+'); do
  printf '%s %s bytes (gzip), %s raw\n' "$f" "$(curl -s -H 'Accept-Encoding: gzip' http://127.0.0.1:$PORT$f | wc -c)" "$(curl -s http://127.0.0.1:$PORT$f | wc -c)"
done
node "$ROOT/scripts/e2e/console-bench.mjs" http://127.0.0.1:$PORT "$RUNS"
