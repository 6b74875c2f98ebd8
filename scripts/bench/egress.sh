#!/usr/bin/env bash
# Container egress figures, side by side in one run (root, Linux, with
# dante-server): a download from a target host in a network namespace made
# for the run, and the time to the first response byte of fresh
# connections, over three paths from the "container" namespace: direct
# (no rules), curl through dante itself (--socks5), and through the agent's
# nftables rules and forwarder to the same dante. Rounds interleave the
# paths (every other round in reverse); medians, ratios, and the
# forwarder/curl-through-proxy ratio round by round (BenchmarkEgress in
# agent/egress).
# Usage: scripts/bench/egress.sh [bytes=268435456] [rounds=5] [connects=500]
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "== egress: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
EGRESS_BENCH_BYTES=${1:-268435456} EGRESS_BENCH_ROUNDS=${2:-5} EGRESS_BENCH_CONNECTS=${3:-500} NPROC=$(nproc) \
  go test -run '^$' -bench '^BenchmarkEgress$' -benchtime 1x -timeout 30m ./agent/egress/
