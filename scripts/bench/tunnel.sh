#!/usr/bin/env bash
# Tunnel figures, side by side in one run: throughput of a bulk transfer
# (default 1 GiB) each way (upload to a sink in the container, download
# from a source there) over a direct loopback TCP connection (the limit),
# through `deckhand tunnel` + the tunnel service, through two plain TCP
# relay processes (the same hops with no protocol: what the hops cost), and
# through `ssh -L` to a private sshd (needs root and openssh-server); then
# 1-byte round-trip latency over each. Rounds interleave the paths;
# medians and ratios.
# Usage: scripts/bench/tunnel.sh [size_bytes=1073741824] [rounds=5] [pings=20000]
set -euo pipefail
SIZE=${1:-1073741824}
ROUNDS=${2:-5}
PINGS=${3:-20000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
CGO_ENABLED=0 go build -o "$WORK/deckhand" ./agent/cmd/deckhand
go build -o "$WORK/tunnelbench" ./scripts/bench/tunnelbench
SSH=()
if [[ $(id -u) -ne 0 ]] || ! command -v sshd >/dev/null && [[ ! -x /usr/sbin/sshd ]]; then
  echo "(no root or no sshd: ssh -L left out)" >&2
  SSH=(-no-ssh)
fi
echo "== tunnelbench -size $SIZE -rounds $ROUNDS -pings $PINGS (nproc $(nproc), $(uname -r))"
"$WORK/tunnelbench" -deckhand "$WORK/deckhand" -size "$SIZE" -rounds "$ROUNDS" -pings "$PINGS" "${SSH[@]}"
