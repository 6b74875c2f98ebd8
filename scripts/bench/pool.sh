#!/usr/bin/env bash
# The warm pool, on the local engine: a create that claims a pooled
# container (POST /api/v1/containers of a prespawn image with a pool) until
# its first `process run` is answered 200 by its agent, with the project's
# proxy permissions document in force. RUNS runs, the pool refilled and at
# rest between them; the p50 and the load average beside it, each claim's
# phases (the control plane's debug line, ms since the create began), and
# two cold creates of an image without a pool in the same run.
# Usage: scripts/bench/pool.sh [runs=10]
# Needs: a built tree (make build) and an engine (scripts/engine.sh start).
set -euo pipefail
RUNS=${1:-10}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
echo "== $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
DECKHAND_BIN=${DECKHAND_BIN:-$ROOT/bin} DECKHAND_POOL_BENCH=$RUNS \
  go test -count=1 -timeout 30m -run '^TestPoolClaimLatency$' -v ./control/containerse2e/ | grep -E 'warm pool|create answered|^(ok|FAIL|---)'
