#!/usr/bin/env bash
# Terminal service figures, side by side in one run (see scripts/bench/terminal/main.go):
# cat throughput (local PTY vs WebSocket vs ssh -tt to a private loopback sshd),
# keystroke echo p50/p99 (WebSocket vs ssh), RSS per idle session.
# Usage: scripts/bench/terminal.sh [-mb 200] [-rounds 3] [-keys 2000] [-idle 200] [-no-ssh]
# Needs openssh-server and openssh-client (apt-get install -y openssh-server openssh-client).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
CGO_ENABLED=0 go build -o "$WORK/terminal-bench" ./scripts/bench/terminal
echo "== $WORK/terminal-bench $*"
"$WORK/terminal-bench" "$@"
