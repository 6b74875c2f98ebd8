#!/usr/bin/env bash
# `make run`: starts the control plane and the agent on embedded defaults in
# ./data, prints their URLs and the admin login, and stops both on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${DECKHAND_RUN_DATA:-./data}
CONTROL_LISTEN=${CONTROL_LISTEN:-127.0.0.1:8080}
AGENT_LISTEN=${AGENT_LISTEN:-127.0.0.1:7700}
mkdir -p "$DATA/agent"
chmod 700 "$DATA"

# The admin login is made once and kept (0600) so later runs reuse it.
login="$DATA/admin-login.txt"
if [[ ! -s "$login" ]]; then
  umask 077
  pw="Dh-$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 20)-9a"
  printf 'email=admin@localhost\npassword=%s\n' "$pw" > "$login"
fi
ADMIN_EMAIL=$(sed -n 's/^email=//p' "$login")
ADMIN_PASSWORD=$(sed -n 's/^password=//p' "$login")

pids=()
started_xvfb=""
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n "$started_xvfb" ]] && scripts/xvfb.sh stop "$started_xvfb" >/dev/null 2>&1 || true
}
trap cleanup INT TERM EXIT

# A virtual display for the display service, when Xvfb is available and no
# display is set.
if [[ -z "${DISPLAY:-}" && -x scripts/xvfb.sh ]] && command -v Xvfb >/dev/null; then
  if out=$(scripts/xvfb.sh start :77 2>/dev/null); then
    DISPLAY=$(sed -n 's/^DISPLAY=//p' <<<"$out" | tail -n1)
    [[ -n "$DISPLAY" ]] && export DISPLAY && started_xvfb=$DISPLAY
  fi
fi

DECKHAND_ADMIN_PASSWORD="$ADMIN_PASSWORD" ./bin/deckhand-control serve --data "$DATA" \
  --listen "$CONTROL_LISTEN" --admin-email "$ADMIN_EMAIL" >"$DATA/control.log" 2>&1 &
pids+=($!)
./bin/deckhand run --data "$DATA/agent" --listen "$AGENT_LISTEN" >"$DATA/agent.log" 2>&1 &
pids+=($!)

for url in "http://$CONTROL_LISTEN/api/v1/meta/public-key" "http://$AGENT_LISTEN/_/cron/health"; do
  for _ in $(seq 100); do curl -fsS -o /dev/null "$url" 2>/dev/null && break; sleep 0.1; done
done

cat <<MSG
deckhand is running.
  control plane  http://$CONTROL_LISTEN/api/v1   (log: $DATA/control.log)
  agent gateway  http://$AGENT_LISTEN/_/<service>/  (log: $DATA/agent.log)
  web terminal   http://$AGENT_LISTEN/_/terminal/
  display        ${DISPLAY:-none (install xvfb for a virtual one)}
  admin login    $ADMIN_EMAIL / $ADMIN_PASSWORD   (kept in $login)
  status         ./bin/deckhand status --listen $AGENT_LISTEN
Ctrl-C stops everything.
MSG
wait -n "${pids[@]}"
