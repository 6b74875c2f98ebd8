#!/usr/bin/env bash
# Process service figures, side by side in one run (see scripts/bench/process/main.go):
# `run` of /bin/true through the gateway p50/p99 against fork/exec in Go and
# `ssh localhost true`; following `cat` of 1 GiB (MB/s) against a plain pipe
# into /dev/null and `ssh localhost cat`; the same through a proxy that cuts
# the connection three times, hashes compared.
# CPU seconds per GiB followed are given for the agent (with its cat), the
# client and the other processes of each path. BEFORE=<deckhand binary>
# (an earlier build) follows through that agent too, in the same rounds.
# Usage: [BEFORE=bin] scripts/bench/process.sh [-size 1024] [-rounds 3] [-runs 400] [-ssh-runs 40] [-no-ssh] [-no-run] [-drops=false]
# Needs openssh-server and openssh-client for the ssh columns (scripts/setup.sh --bench), and root for sshd.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
CGO_ENABLED=0 go build -o "$WORK/deckhand" ./agent/cmd/deckhand
CGO_ENABLED=0 go build -o "$WORK/process-bench" ./scripts/bench/process
echo "== $WORK/process-bench -bin deckhand $* ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), deckhand $(git describe --always --dirty 2>/dev/null))"
"$WORK/process-bench" -bin "$WORK/deckhand" ${BEFORE:+-before "$BEFORE"} "$@"
