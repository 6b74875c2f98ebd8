#!/usr/bin/env bash
# `make run`: starts the control plane and a container that runs, on the
# embedded store in one data dir, prints how to reach it, the admin login
# and the first commands, and stops them on Ctrl-C.
#
#   scripts/run.sh          start; refuses when an instance already runs on the data dir
#   scripts/run.sh --check  exit 0 when none runs on the data dir; else print its URLs, exit 1
#
# Environment (defaults in brackets):
#   RUNTIME               docker: the container runs on the local engine (dockerd,
#                         started when none answers) from the deckhand/base image,
#                         built once; none: no engine, the agent runs on this
#                         machine as you, and "the container" is this machine [docker]
#   DECKHAND_RUN_DATA     the data dir [./data]
#   CONTROL_LISTEN        the control plane's address [127.0.0.1:8080]
#   PROXY_LISTEN          (docker) the platform proxy: every service of the container at
#                         http://<project>-<container>-<service>-1.local.localhost:<port>/ [127.0.0.1:8088]
#   AGENT_LISTEN          (none) the agent's gateway [127.0.0.1:7700]; its services
#                         listen on the gateway's port + 1..16
#   DECKHAND_RUN_DISPLAY  (none) the X display to use [the first free from :77]; Xvfb is
#                         started on it unless an X server already answers there;
#                         with DISPLAY set, that display is used and no Xvfb started
#   DECKHAND_BIN          where the binaries are [./bin]
#
# At first start on a data dir it makes the admin login (admin-login.txt,
# 0600) and a project owned by the admin. With docker it creates a
# container there from deckhand/base:<version> (container.env) and waits
# until its agent has enrolled and answers; later starts start that same
# container again (its workspace kept), and Ctrl-C stops it. With none it
# registers a container record and mints its agent token (local.env, 0600),
# so the agent it starts syncs its proxy permissions from the control plane.
# Logs are appended to control.log (and agent.log). An Xvfb, and the local
# container engine (scripts/engine.sh), are stopped on exit only when this
# script started them. With none, a display and no session D-Bus, a session
# bus (with the accessibility bus) is started for the agent, and stopped on
# exit.
set -euo pipefail
cd "$(dirname "$0")/.."

check_only=""
case "${1:-}" in
--check) check_only=1 ;;
"") ;;
*) echo "usage: scripts/run.sh [--check]" >&2; exit 2 ;;
esac

RUNTIME=${RUNTIME:-docker}
case "$RUNTIME" in
docker | none) ;;
*) echo "run.sh: RUNTIME=$RUNTIME: want docker (a container on the local engine) or none (the agent on this machine)" >&2; exit 2 ;;
esac
DATA=${DECKHAND_RUN_DATA:-./data}
CONTROL_LISTEN=${CONTROL_LISTEN:-127.0.0.1:8080}
PROXY_LISTEN=${PROXY_LISTEN:-127.0.0.1:8088}
AGENT_LISTEN=${AGENT_LISTEN:-127.0.0.1:7700}
AGENT_PORT_BASE=${AGENT_LISTEN##*:}
CONTROL_URL="http://$CONTROL_LISTEN"
AGENT_URL="http://$AGENT_LISTEN"

# One instance per data dir: the lock is held by this script for as long as
# it runs. A second start reads the first's URLs from run.info and leaves
# everything of it alone (logs, store, display).
refuse() {
  echo "deckhand is already running on $DATA; nothing was started or changed." >&2
  if [[ -s "$DATA/run.info" ]]; then
    sed 's/^/  /' "$DATA/run.info" >&2
  fi
  echo "Stop it with Ctrl-C where it runs (or kill $(cat "$DATA/run.pid" 2>/dev/null || echo '<its pid>')), or give a second instance its own DECKHAND_RUN_DATA, CONTROL_LISTEN, PROXY_LISTEN and AGENT_LISTEN." >&2
  exit 1
}
command -v flock >/dev/null || { echo "run.sh: flock is missing; run scripts/setup.sh" >&2; exit 1; }
if [[ -e "$DATA/run.lock" ]]; then
  exec 9<"$DATA/run.lock"
  flock -n 9 || refuse
  exec 9<&-
fi
[[ -n "$check_only" ]] && exit 0

BIN=${DECKHAND_BIN:-./bin}
for b in "$BIN/deckhand" "$BIN/deckhand-control"; do
  [[ -x "$b" ]] || { echo "run.sh: $b is missing; run make build (or make run)" >&2; exit 1; }
done
for c in curl jq; do
  command -v "$c" >/dev/null || { echo "run.sh: $c is missing; run scripts/setup.sh" >&2; exit 1; }
done

mkdir -p "$DATA/agent"
chmod 700 "$DATA"
exec 9>>"$DATA/run.lock"
flock -n 9 || refuse
echo $$ >"$DATA/run.pid"

# The admin login is made once and kept (0600) so later runs reuse it. Only
# the secrets' files are made under umask 077: the binaries keep the user's
# umask, so what the agent writes for them is theirs as usual.
login="$DATA/admin-login.txt"
if [[ ! -s "$login" ]]; then
  pw="Dh-$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)-9a"
  (umask 077 && printf 'email=admin@localhost\npassword=%s\n' "$pw" >"$login")
fi
ADMIN_EMAIL=$(sed -n 's/^email=//p' "$login")
ADMIN_PASSWORD=$(sed -n 's/^password=//p' "$login")

pids=()
xvfb_state="$DATA/xvfb"
started_xvfb=""
started_bus=""
started_engine=""
stop_container=""
cleanup() {
  trap - INT TERM EXIT
  if [[ -n "$stop_container" ]]; then
    # The container stops with the control plane that runs it; its
    # workspace volume stays for the next start.
    # When the control plane is gone already (a signal to the whole
    # process group), the engine stops it, and the next start's
    # reconciler records that.
    curl -fsS -o /dev/null --max-time 30 -X POST "$CONTROL_URL/api/v1/containers/$stop_container/stop" \
      -H "Authorization: Bearer $TOKEN" 2>/dev/null ||
      docker ps -q --filter "label=deckhand.container=$stop_container" | xargs -r docker stop -t 10 >/dev/null 2>&1 || true
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n "$started_bus" ]]; then
    # The bus and what it started (the accessibility bus) are its group.
    kill -TERM -- "-$started_bus" 2>/dev/null || true
  fi
  if [[ -n "$started_xvfb" ]]; then
    XVFB_STATE="$xvfb_state" scripts/xvfb.sh stop "$started_xvfb" >/dev/null 2>&1 || true
  fi
  if [[ -n "$started_engine" ]]; then
    scripts/engine.sh stop || true
  fi
  rm -f "$DATA/run.info" "$DATA/run.pid"
}
trap cleanup INT TERM EXIT

# The container engine: started when none answers, and then (only then)
# stopped again on exit.
engine_out=$(scripts/engine.sh start 9>&-) || exit 1
echo "$engine_out"
[[ "$engine_out" == "engine: started "* ]] && started_engine=1

# A virtual display for the display service, when Xvfb is available and no
# display is set: on a display number no X server holds (its lock file
# absent), with its pid files under the data dir, so stopping it can only
# reach what this script started.
free_display() {
  local n
  for n in $(seq 77 199); do
    [[ -e "/tmp/.X$n-lock" || -e "/tmp/.X11-unix/X$n" ]] || { echo ":$n"; return 0; }
  done
  return 1
}
if [[ "$RUNTIME" == none && -z "${DISPLAY:-}" ]] && command -v Xvfb >/dev/null; then
  disp=${DECKHAND_RUN_DISPLAY:-}
  [[ -n "$disp" ]] || disp=$(free_display) || true
  if [[ -n "$disp" ]] && XVFB_STATE="$xvfb_state" scripts/xvfb.sh status "$disp"; then
    export DISPLAY=$disp # someone else's X server: used, never stopped
  elif [[ -n "$disp" ]] && out=$(XVFB_STATE="$xvfb_state" scripts/xvfb.sh start "$disp" 9>&- 2>/dev/null); then
    DISPLAY=$(sed -n 's/^DISPLAY=//p' <<<"$out" | tail -n1)
    [[ -n "$DISPLAY" ]] && export DISPLAY && started_xvfb=$DISPLAY
  fi
fi

# The desktop's session D-Bus, so the accessibility tree and marked
# screenshots work: with a display and no session bus, one is started for
# it (stopped on exit), with the accessibility bus (at-spi) launched on it
# at once. at-spi's launcher publishes the accessibility bus on the
# display (AT_SPI_BUS); the agent and every program it starts get
# DBUS_SESSION_BUS_ADDRESS and AT_SPI_BUS_ADDRESS.
if [[ "$RUNTIME" == none && -n "${DISPLAY:-}" && -z "${DBUS_SESSION_BUS_ADDRESS:-}" ]] && command -v dbus-daemon >/dev/null; then
  if [[ -z "${XDG_RUNTIME_DIR:-}" ]]; then
    export XDG_RUNTIME_DIR="$(cd "$DATA" && pwd)/runtime"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
  fi
  # --fork: the daemon leads its own session, so its group holds what it
  # activates; it prints its address, then its pid.
  if bus=$(dbus-daemon --session --fork --print-address=1 --print-pid=1 9>&- 2>/dev/null); then
    export DBUS_SESSION_BUS_ADDRESS=$(sed -n 1p <<<"$bus")
    started_bus=$(sed -n 2p <<<"$bus")
    if command -v dbus-send >/dev/null; then
      a11y=$(dbus-send --session --print-reply=literal --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress 2>/dev/null | tr -d ' ') || true
      [[ -n "$a11y" ]] && export AT_SPI_BUS_ADDRESS=$a11y
    fi
  fi
fi

wait_up() { # url pid log
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "run.sh: $1 did not answer; the end of $3:" >&2
  tail -n 20 "$3" >&2
  exit 1
}

stamp() { printf '\n=== scripts/run.sh started %s (pid %s) ===\n' "$(date -u +%FT%TZ)" "$$"; }

# The image of the container: deckhand/base of this build, made once into
# the engine (scripts/image.sh keeps the root file system it starts from,
# so a new build of the binaries only rebuilds the image's last steps).
VERSION=$("$BIN/deckhand-control" version | awk '{print $2}')
IMAGE="deckhand/base:$VERSION"
if [[ "$RUNTIME" == docker ]] && ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "run.sh: building $IMAGE (the first build of its root file system takes minutes)"
  BIN="$BIN" scripts/image.sh "$VERSION" base 9>&- || { echo "run.sh: scripts/image.sh failed; RUNTIME=none runs the agent on this machine instead" >&2; exit 1; }
fi

runtime_flags=(--runtime none)
if [[ "$RUNTIME" == docker ]]; then
  runtime_flags=(--runtime docker --proxy-listen "$PROXY_LISTEN" --container-domain localhost)
fi
stamp >>"$DATA/control.log"
DECKHAND_ADMIN_PASSWORD="$ADMIN_PASSWORD" "$BIN/deckhand-control" serve --data "$DATA" \
  --listen "$CONTROL_LISTEN" --admin-email "$ADMIN_EMAIL" "${runtime_flags[@]}" >>"$DATA/control.log" 2>&1 9>&- &
pids+=($!)
wait_up "$CONTROL_URL/api/v1/meta/public-key" "$!" "$DATA/control.log"

# First start: a project and a container owned by the admin, and the
# container's agent token. Kept in local.env (0600) for later starts.
api() { # method path [json] -> the answer's data; fails on a non-2xx
  local out
  out=$(curl -sS -X "$1" "$CONTROL_URL$2" -H 'Content-Type: application/json' \
    ${TOKEN:+-H "Authorization: Bearer $TOKEN"} ${3:+--data "$3"} -w '\n%{http_code}')
  local code=${out##*$'\n'}
  out=${out%$'\n'*}
  if [[ "$code" != 2* ]]; then
    echo "run.sh: $1 $2 answered $code: $(jq -r '.message // .' <<<"$out" 2>/dev/null || echo "$out")" >&2
    return 1
  fi
  jq -c '.data' <<<"$out"
}
login_admin() {
  TOKEN=""
  session=$(api POST /api/v1/users/auth/login "$(jq -nc --arg e "$ADMIN_EMAIL" --arg p "$ADMIN_PASSWORD" '{email:$e,password:$p}')")
  TOKEN=$(jq -r .token <<<"$session")
  admin_id=$(jq -r .user.id <<<"$session")
}

if [[ "$RUNTIME" == docker ]]; then
  # The container: made at first start, started again at later ones; one
  # whose record is gone (deleted through the API or the console) is made
  # anew.
  login_admin
  containerenv="$DATA/container.env"
  PROJECT_ID="" CONTAINER_ID="" ct=""
  if [[ -s "$containerenv" ]]; then
    PROJECT_ID=$(sed -n 's/^PROJECT_ID=//p' "$containerenv")
    CONTAINER_ID=$(sed -n 's/^CONTAINER_ID=//p' "$containerenv")
    ct=$(api GET "/api/v1/containers/$CONTAINER_ID" 2>/dev/null) || ct=""
    api GET "/api/v1/projects/$PROJECT_ID" >/dev/null 2>&1 || PROJECT_ID=""
  fi
  image_id=$(api GET "/api/v1/images/public?search=$(jq -rn --arg s "$IMAGE" '$s|@uri')&limit=100" |
    jq -r --arg n "$IMAGE" '[.images[] | select(.image_name == $n)][0].id // empty')
  [[ -n "$image_id" ]] || { echo "run.sh: $IMAGE is not in the catalog (the control plane registers it at start; see control.log)" >&2; exit 1; }
  if [[ -z "$ct" ]]; then
    [[ -n "$PROJECT_ID" ]] || PROJECT_ID=$(api POST /api/v1/projects '{"name":"local"}' | jq -r .id)
    ct=$(api POST /api/v1/containers "$(jq -nc --arg p "$PROJECT_ID" --arg i "$image_id" '{project_id:$p,name:"local",image_id:$i}')")
    CONTAINER_ID=$(jq -r .id <<<"$ct")
    (umask 077 && printf 'PROJECT_ID=%s\nCONTAINER_ID=%s\n' "$PROJECT_ID" "$CONTAINER_ID" >"$containerenv.tmp")
    mv "$containerenv.tmp" "$containerenv"
  fi
  stop_container=$CONTAINER_ID
  case $(jq -r .status <<<"$ct") in
  stopped | failed) ct=$(api POST "/api/v1/containers/$CONTAINER_ID/start") ;;
  deleting) echo "run.sh: container $CONTAINER_ID is being deleted; start again once it is gone" >&2; exit 1 ;;
  esac
  # Running once its agent has enrolled and answered; failed says why.
  for _ in $(seq 600); do
    case $(jq -r .status <<<"$ct") in
    running) break ;;
    failed)
      echo "run.sh: container $CONTAINER_ID failed: $(jq -r .status_reason <<<"$ct")" >&2
      exit 1 ;;
    esac
    sleep 0.2
    ct=$(api GET "/api/v1/containers/$CONTAINER_ID")
  done
  [[ $(jq -r .status <<<"$ct") == running ]] || { echo "run.sh: container $CONTAINER_ID is still $(jq -r .status <<<"$ct") after 2 minutes" >&2; exit 1; }
  url() { jq -r --arg s "$1" '.urls[$s]' <<<"$ct"; }
  older=""
  [[ $(jq -r .image_id <<<"$ct") == "$image_id" ]] || older="   (an earlier build's image: deckhand containers rm $CONTAINER_ID, and the next start makes one from $IMAGE)"

  cat >"$DATA/run.info" <<INFO
control plane  $CONTROL_URL/api/v1   (log: $DATA/control.log)
web console    $CONTROL_URL/
container      $CONTAINER_ID in project $PROJECT_ID, running$older
image          $IMAGE
platform proxy http://$PROXY_LISTEN   (each service of the container at its own host name)
web terminal   $(url terminal)/   (a browser needs a token: deckhand containers token $CONTAINER_ID)
processes      $(url process)/api/v1/process
admin login    $ADMIN_EMAIL   (password in $login)
INFO

  cat <<MSG
deckhand is running.
$(sed 's/^/  /' "$DATA/run.info")

First commands (README.md's quickstart has the rest: sign-up, your own container, cp, a tunnel):
  export PATH="$(cd "$BIN" && pwd):\$PATH"
  sed -n s/^password=//p $login | deckhand login $CONTROL_URL --email $ADMIN_EMAIL --password-stdin
  deckhand exec --container $CONTAINER_ID -- uname -a
  deckhand containers token $CONTAINER_ID
Ctrl-C stops everything. The container stops too; its workspace stays for the next start.
MSG
  wait -n "${pids[@]}"
  exit
fi

localenv="$DATA/local.env"
if [[ ! -s "$localenv" ]]; then
  login_admin
  project=$(api POST /api/v1/admin/projects "$(jq -nc --arg o "$admin_id" '{owner_id:$o,name:"local"}')" | jq -r .id)
  container=$(api POST /api/v1/admin/containers "$(jq -nc --arg p "$project" '{project_id:$p,name:"local"}')" | jq -r .id)
  agent_token=$(api POST "/api/v1/containers/$container/agent-tokens" '{}' | jq -r .token)
  unset TOKEN
  (umask 077 && printf 'PROJECT_ID=%s\nCONTAINER_ID=%s\nAGENT_TOKEN=%s\n' "$project" "$container" "$agent_token" >"$localenv.tmp")
  mv "$localenv.tmp" "$localenv"
fi
PROJECT_ID=$(sed -n 's/^PROJECT_ID=//p' "$localenv")
CONTAINER_ID=$(sed -n 's/^CONTAINER_ID=//p' "$localenv")
AGENT_TOKEN=$(sed -n 's/^AGENT_TOKEN=//p' "$localenv")

stamp >>"$DATA/agent.log"
DECKHAND_TOKEN="$AGENT_TOKEN" "$BIN/deckhand" run --data "$DATA/agent" --listen "$AGENT_LISTEN" \
  --port-base "$AGENT_PORT_BASE" --control-url "$CONTROL_URL" \
  --project-id "$PROJECT_ID" --container-id "$CONTAINER_ID" >>"$DATA/agent.log" 2>&1 9>&- &
pids+=($!)
wait_up "$AGENT_URL/_/cron/health" "$!" "$DATA/agent.log"

cat >"$DATA/run.info" <<INFO
control plane  $CONTROL_URL/api/v1   (log: $DATA/control.log)
web console    $CONTROL_URL/
agent gateway  $AGENT_URL/_/<service>/   (log: $DATA/agent.log)
web terminal   $AGENT_URL/_/terminal/
display        ${DISPLAY:-none (install xvfb for a virtual one)}
session bus    ${DBUS_SESSION_BUS_ADDRESS:-none (install dbus for the accessibility tree)}
container      $CONTAINER_ID in project $PROJECT_ID (agent token in $localenv)
admin login    $ADMIN_EMAIL   (password in $login)
INFO

cat <<MSG
deckhand is running.
$(sed 's/^/  /' "$DATA/run.info")

First commands (README.md's quickstart has the rest: sign-up, cp, the terminal, a tunnel):
  export PATH="$(cd "$BIN" && pwd):\$PATH" DECKHAND_AGENT_URL=$AGENT_URL
  deckhand status --listen $AGENT_LISTEN
  deckhand exec -- uname -a
  sed -n s/^password=//p $login | deckhand login $CONTROL_URL --email $ADMIN_EMAIL --password-stdin
Ctrl-C stops everything.
MSG
wait -n "${pids[@]}"
