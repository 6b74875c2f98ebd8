#!/usr/bin/env bash
# MCP service figures, side by side in one run (services/mcp/bench_test.go):
# a tool call's round trip through the gateway for the no-op tool (mcp_ping)
# and for process_run of /bin/true, against the process service's own REST
# call for the same command (through the gateway, and straight to its port).
# p50-us and p99-us per case; added-p50-us is process_run's p50 less the REST
# call's. Usage: scripts/bench/mcp.sh [CALLS per case, default 2000]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
CGO_ENABLED=0 go build -o "$WORK/deckhand" ./agent/cmd/deckhand
echo "== mcp tool round trips ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), deckhand $(git describe --always --dirty 2>/dev/null))"
DECKHAND_BIN="$WORK" go test -run '^$' -bench BenchmarkToolRoundTrip -benchtime "${1:-2000}x" -count 1 ./services/mcp/
