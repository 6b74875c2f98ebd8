#!/usr/bin/env bash
# The local container engine that the tests, `make image` and `make run`
# use: Debian's dockerd on /var/run/docker.sock. These machines have no
# systemd, so when nothing answers on the socket this script starts
# dockerd itself, in the background, with its log in the state dir, and
# waits (bounded) until it answers. It also makes /run/podman, which
# `podman system service` needs before it starts.
#
#   scripts/engine.sh start   start dockerd unless one answers; prints
#                             "engine: started <pid>" or "engine: running"
#   scripts/engine.sh stop    stop the dockerd this script started (its pid
#                             file); one started any other way is left alone
#   scripts/engine.sh status  exit 0 when an engine answers on the socket
#
# Environment (defaults in brackets):
#   DECKHAND_ENGINE_STATE    state dir: dockerd.log, dockerd.pid [/var/lib/deckhand-engine]
#   DECKHAND_ENGINE_TIMEOUT  seconds to wait for dockerd to answer [60]
#
# dockerd.pid exists only while a dockerd this script started runs: a
# caller that saw "started" owns it and may stop it; one that saw
# "running" must not.
set -euo pipefail

STATE=${DECKHAND_ENGINE_STATE:-/var/lib/deckhand-engine}
TIMEOUT=${DECKHAND_ENGINE_TIMEOUT:-60}
SOCK=/var/run/docker.sock
PIDFILE=$STATE/dockerd.pid
LOG=$STATE/dockerd.log

SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"

# answers: the engine's ping on the socket (no docker CLI or DOCKER_HOST
# involved: this script is about this machine's own socket). A user
# outside the docker group cannot open the socket; sudo can.
answers() {
  local out
  out=$(curl -sS --max-time 2 --unix-socket "$SOCK" http://engine/_ping 2>/dev/null) ||
    out=$( [[ -n "$SUDO" ]] && $SUDO -n curl -sS --max-time 2 --unix-socket "$SOCK" http://engine/_ping 2>/dev/null) || true
  [[ "$out" == OK ]]
}

# ours: the pid in dockerd.pid when that process is alive and is dockerd
# (a stale file after a reboot, or a reused pid, names nothing of ours).
ours() {
  local pid
  pid=$($SUDO cat "$PIDFILE" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ "$($SUDO cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]] || return 1
  echo "$pid"
}

start() {
  $SUDO mkdir -p /run/podman "$STATE"
  $SUDO chmod 0700 "$STATE"
  if answers; then
    echo "engine: running"
    return 0
  fi
  command -v dockerd >/dev/null || { echo "engine: dockerd is missing; run scripts/setup.sh (docker.io)" >&2; exit 1; }
  # One starter at a time: two `make test` on one machine must not both
  # start a dockerd.
  exec 8>>"$STATE/lock"
  flock -w "$TIMEOUT" 8 || { echo "engine: another start holds $STATE/lock" >&2; exit 1; }
  if answers; then
    echo "engine: running"
    return 0
  fi
  local pid
  if ! pid=$(ours); then
    printf '\n=== scripts/engine.sh started dockerd %s ===\n' "$(date -u +%FT%TZ)" | $SUDO tee -a "$LOG" >/dev/null
    # setsid: out of the caller's process group and terminal, so Ctrl-C
    # on `make` does not reach the engine; no fd of the caller kept open.
    pid=$($SUDO bash -c 'setsid dockerd </dev/null >>"$1" 2>&1 8>&- 9>&- & echo $!' _ "$LOG")
    echo "$pid" | $SUDO tee "$PIDFILE" >/dev/null
  fi
  local deadline=$((SECONDS + TIMEOUT))
  until answers; do
    if ! $SUDO kill -0 "$pid" 2>/dev/null; then
      $SUDO rm -f "$PIDFILE"
      echo "engine: dockerd exited; the end of $LOG:" >&2
      $SUDO tail -n 20 "$LOG" >&2
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "engine: dockerd (pid $pid) did not answer on $SOCK within ${TIMEOUT}s; the end of $LOG:" >&2
      $SUDO tail -n 20 "$LOG" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "engine: started $pid"
}

stop() {
  local pid
  if ! pid=$(ours); then
    $SUDO rm -f "$PIDFILE"
    echo "engine: none of ours runs"
    return 0
  fi
  $SUDO kill -TERM "$pid"
  # dockerd stops its containers (10 s each by default) and its containerd.
  for _ in $(seq 600); do
    $SUDO kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if $SUDO kill -0 "$pid" 2>/dev/null; then
    echo "engine: dockerd (pid $pid) still runs after 60 s; left running" >&2
    exit 1
  fi
  $SUDO rm -f "$PIDFILE"
  echo "engine: stopped $pid"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) answers ;;
*) echo "usage: scripts/engine.sh start|stop|status" >&2; exit 2 ;;
esac
