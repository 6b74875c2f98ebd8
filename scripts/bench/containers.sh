#!/usr/bin/env bash
# Containers that run, on the local engine, in one run:
#  1. create → running → first command: POST /api/v1/containers until the
#     container is running (its agent enrolled and answered the health
#     check), an access token minted and `process run` of `true` answered
#     200 at the agent; beside a bare `docker run -d` of the same image
#     (deckhand/base, its own entrypoint: the agent without a control
#     plane) until its gateway answers HTTP, and beside the same bare run
#     with deckhand's engine settings (its network, init, capabilities
#     and a volume). RUNS each, alternating; medians, p95 and the ratio;
#     and where the deckhand runs' time went: the median of each step of
#     the control plane's way to running, in ms since the create was
#     accepted (its debug log, "container: provisioned": the engine's
#     network look, container create, start, the agent's process start
#     by the engine's clock, its address, health, enrolment, the running
#     write), and of the client's (a keep-alive Go client polling every
#     5 ms: accepted, running seen, access token, first process run).
#  2. restart → first command: one container restarted RUNS times, until
#     a `process run` with its access token answers again; median, p95;
#     and the engine's own events of each restart (kill → die: the
#     agent's shutdown under docker-init; die → stop: the engine's
#     teardown; stop → start: its start again).
#  3. CONCURRENT containers created at once: the time until all run, the
#     idle memory of each container's processes (the agent, its init and
#     the ssh server; `docker top`): RSS summed, PSS and its anonymous
#     part, then the agent and the ssh server each alone, and no engine
#     object left once they are deleted.
# Usage: scripts/bench/containers.sh [runs=10] [concurrent=20]
# Needs: a built tree (make build), an engine (scripts/engine.sh start),
# curl and jq. It builds deckhand/base:<version> when absent.
set -euo pipefail
RUNS=${1:-10}
CONC=${2:-20}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BIN=${DECKHAND_BIN:-$ROOT/bin}
WORK=$(mktemp -d)
PORT=${PORT:-27600}
CONTROL=http://127.0.0.1:$PORT
PID=""
BARE=()
cleanup() {
  ((${#BARE[@]})) && docker rm -f -v "${BARE[@]}" >/dev/null 2>&1
  [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  if [[ -s "$WORK/inst" ]]; then
    inst=$(cat "$WORK/inst")
    docker ps -aq --filter "label=deckhand.installation=$inst" | xargs -r docker rm -f >/dev/null
    docker volume ls -q --filter "label=deckhand.installation=$inst" | xargs -r docker volume rm >/dev/null
    docker network ls -q --filter "label=deckhand.installation=$inst" | xargs -r docker network rm >/dev/null
  fi
  rm -rf "$WORK"
  [[ -n "${BUILT:-}" ]] && docker rmi "$BUILT" >/dev/null 2>&1
  true
}
trap cleanup EXIT

VERSION=$("$BIN/deckhand-control" version | awk '{print $2}')
IMAGE=deckhand/base:$VERSION
BUILT=""
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  BIN="$BIN" scripts/image.sh "$VERSION" base
  BUILT=$IMAGE
fi
echo "== $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, image $IMAGE"

PW="Bench-$(head -c 12 /dev/urandom | base64 | tr -d '/+=')-9a"
DECKHAND_ADMIN_PASSWORD=$PW "$BIN/deckhand-control" serve --data "$WORK/data" --listen 127.0.0.1:$PORT \
  --admin-email admin@localhost --runtime docker --max-containers-per-project 0 --enroll-timeout 5m --log-level debug >"$WORK/control.log" 2>&1 &
PID=$!
for _ in $(seq 300); do curl -fsS -o /dev/null $CONTROL/api/v1/meta/public-key 2>/dev/null && break; sleep 0.1; done
api() { # method path [json] -> data
  curl -fsS -X "$1" "$CONTROL$2" -H 'Content-Type: application/json' ${TOKEN:+-H "Authorization: Bearer $TOKEN"} ${3:+--data "$3"} | jq -c .data
}
TOKEN=""
TOKEN=$(api POST /api/v1/users/auth/login "$(jq -nc --arg p "$PW" '{email:"admin@localhost",password:$p}')" | jq -r .token)
PROJECT=$(api POST /api/v1/projects '{"name":"bench"}' | jq -r .id)
IMG=$(api GET "/api/v1/images/public?search=$(jq -rn --arg s "$IMAGE" '$s|@uri')" | jq -r --arg n "$IMAGE" '[.images[]|select(.image_name==$n)][0].id')

ms() { echo $(($(date +%s%N) / 1000000)); }
# deckhand: create → running → a token → process run answered, by one
# keep-alive Go client (scripts/bench/containers) that polls every 5 ms:
# curl and jq processes per poll would add their own start to the figure.
CB=$WORK/containers-bench
CGO_ENABLED=0 go build -o "$CB" ./scripts/bench/containers
cb() { "$CB" -control "$CONTROL" -token "$TOKEN" "$@"; }
deckhand_once() { # name -> ms (and the client's phases to $WORK/client)
  local out id
  out=$(cb create "$PROJECT" "$IMG" "$1") || return 1
  read -r id total accepted running minted ran again <<<"$out"
  echo "accepted=$accepted running=$running token=$minted process_run=$ran second_run_took=$again" >>"$WORK/client"
  echo "$total"
  [[ -s "$WORK/inst" ]] || docker inspect -f '{{index .Config.Labels "deckhand.installation"}}' "$(docker ps -q --filter "label=deckhand.container=$id")" >"$WORK/inst"
  api DELETE "/api/v1/containers/$id" >/dev/null
}
# bare: docker run -d of the same image → its gateway answers HTTP.
bare_once() { # -> ms
  local t0 name ip
  name=deckhand-bench-bare-$RANDOM$RANDOM
  t0=$(ms)
  docker run -d --name "$name" --label deckhand.bench=1 "$IMAGE" >/dev/null
  BARE+=("$name")
  ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$name")
  until curl -sS -o /dev/null --max-time 1 "http://$ip:7700/_/process/health" 2>/dev/null; do sleep 0.02; done
  echo $(($(ms) - t0))
  docker rm -f "$name" >/dev/null
  BARE=()
}
# bare with deckhand's engine settings: the installation's network (its
# own bridge, containers kept apart, Docker's embedded DNS), docker-init,
# the capabilities and a workspace volume; what the control plane adds is
# the difference to the deckhand column, what the isolation costs the
# difference to the bare one.
bare_cfg_once() { # -> ms
  local t0 name ip inst
  inst=$(cat "$WORK/inst")
  name=deckhand-bench-cfg-$RANDOM$RANDOM
  t0=$(ms)
  docker run -d --name "$name" --label deckhand.bench=1 --network "deckhand-$inst" --init --cap-add NET_ADMIN --cap-drop NET_RAW \
    --mount "type=volume,target=/home/user,volume-label=deckhand.bench=1" "$IMAGE" >/dev/null
  BARE+=("$name")
  ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"deckhand-$inst\").IPAddress}}" "$name")
  until curl -sS -o /dev/null --max-time 1 "http://$ip:7700/_/process/health" 2>/dev/null; do sleep 0.02; done
  echo $(($(ms) - t0))
  docker rm -f -v "$name" >/dev/null
  BARE=()
}
stats() { # values... -> "median p95"
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; p=v[int(NR*0.95+0.999)]; printf "%d %d", m, p}'
}
dh=() bare=() cfg=()
for i in $(seq "$RUNS"); do
  dh+=("$(deckhand_once "b$i")")
  bare+=("$(bare_once)")
  cfg+=("$(bare_cfg_once)")
done
if ((RUNS > 0)); then
  read -r dm dp <<<"$(stats "${dh[@]}")"
  read -r bm bp <<<"$(stats "${bare[@]}")"
  echo "== create → running → first process run, $RUNS runs (ms): ${dh[*]}"
  echo "   deckhand: median $dm ms, p95 $dp ms"
  echo "== bare docker run -d → gateway answers HTTP, $RUNS runs (ms): ${bare[*]}"
  echo "   bare:     median $bm ms, p95 $bp ms"
  echo "   overhead: median $((dm - bm)) ms, ratio $(awk -v a="$dm" -v b="$bm" 'BEGIN{printf "%.2f", a/b}')"
  read -r cm cp <<<"$(stats "${cfg[@]}")"
  echo "== bare docker run -d with deckhand's engine settings (network, init, capabilities, volume), $RUNS runs (ms): ${cfg[*]}"
  echo "   settings: median $cm ms, p95 $cp ms (the settings' share $((cm - bm)) ms; the control plane's $((dm - cm)) ms)"
  # The steps, in the order they ended (a step missing from a run, such
  # as a retry's, is left out of its median): the control plane's, then
  # the client's.
  steps() { # title < lines of step=ms ...
    awk -v title="$1" '{for (i = 1; i <= NF; i++) {split($i, kv, "="); if (!(kv[1] in n)) order[++k] = kv[1]; v[kv[1], ++n[kv[1]]] = kv[2]}}
      END {printf "   %s:", title
        for (j = 1; j <= k; j++) {s = order[j]; c = n[s]; m = 0
          for (a = 1; a <= c; a++) x[a] = v[s, a]
          for (a = 1; a <= c; a++) for (b = a + 1; b <= c; b++) if (x[b] < x[a]) {t = x[a]; x[a] = x[b]; x[b] = t}
          m = (c % 2) ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
          printf " %s %d", s, m}
        print ""}'
  }
  jq -rR 'fromjson? | select(.msg=="container: provisioned") | .ms' "$WORK/control.log" | head -n "$RUNS" |
    steps "control plane's steps (median ms since the create was accepted)"
  steps "client's steps (median ms since the POST was sent)" <"$WORK/client"
fi

# restart → first command: one container restarted RUNS times; the
# restart answers once its agent is healthy again, then a `process run`
# with the same access token.
if ((RUNS > 0)); then
  rid=$(api POST /api/v1/containers "$(jq -nc --arg p "$PROJECT" --arg i "$IMG" '{project_id:$p,image_id:$i,name:"restarted"}')" | jq -r .id)
  for _ in $(seq 3000); do
    c=$(api GET "/api/v1/containers/$rid")
    [[ $(jq -r .status <<<"$c") == running ]] && break
    sleep 0.02
  done
  # The engine's own account of each restart: kill (the stop's signal),
  # die (PID 1 gone), stop (its teardown done), start.
  docker events --filter "label=deckhand.container=$rid" --filter type=container --format '{{.TimeNano}} {{.Action}}' >"$WORK/events" &
  EV=$!
  sleep 0.2
  read -r -a rs <<<"$(cb restart "$rid" "$RUNS")"
  sleep 0.2
  kill "$EV" 2>/dev/null; wait "$EV" 2>/dev/null || true
  read -r rsm rsp <<<"$(stats "${rs[@]}")"
  echo "== restart → first process run, $RUNS runs (ms): ${rs[*]}"
  echo "   restart: median $rsm ms, p95 $rsp ms"
  awk '$2=="kill" && !k {k=$1} $2=="die" && k && !d {d=$1} $2=="stop" && d && !s {s=$1} $2=="start" && s {
      printf "kill→die=%d die→stop=%d stop→start=%d\n", (d-k)/1e6, (s-d)/1e6, ($1-s)/1e6; k=d=s=0}' "$WORK/events" |
    steps "the engine's restart (median ms between its events)"
  api DELETE "/api/v1/containers/$rid" >/dev/null
fi

# Concurrent creates (none asked: done).
((CONC > 0)) || exit 0
t0=$(ms)
ids=()
jobs=()
for i in $(seq "$CONC"); do
  api POST /api/v1/containers "$(jq -nc --arg p "$PROJECT" --arg i "$IMG" --arg n "c$i" '{project_id:$p,image_id:$i,name:$n}')" | jq -r .id >"$WORK/c$i" &
  jobs+=($!)
done
wait "${jobs[@]}"
for i in $(seq "$CONC"); do ids+=("$(cat "$WORK/c$i")"); done
[[ -s "$WORK/inst" ]] || docker inspect -f '{{index .Config.Labels "deckhand.installation"}}' "$(docker ps -aq --filter "label=deckhand.container=${ids[0]}" | head -n1)" >"$WORK/inst"
for _ in $(seq 6000); do
  n=$(api GET "/api/v1/containers?project_id=$PROJECT&limit=100" | jq '[.containers[]|select(.status=="running")]|length')
  ((n == CONC)) && break
  failed=$(api GET "/api/v1/containers?project_id=$PROJECT&limit=100" | jq -c '[.containers[]|select(.status=="failed")|.status_reason]')
  [[ "$failed" == "[]" ]] || { echo "concurrent creates failed: $failed" >&2; exit 1; }
  sleep 0.1
done
echo "== $CONC concurrent creates: all running after $(($(ms) - t0)) ms ($n running)"
sleep 10 # idle
rss=() pss=() anon=()
for id in "${ids[@]}"; do
  c=$(docker ps -q --filter "label=deckhand.container=$id")
  pids=$(docker top "$c" -o pid | awk 'NR>1 {print $1}')
  rss+=("$(docker top "$c" -o pid,rss | awk 'NR>1 {s+=$2} END {print int(s/1024)}')")
  # PSS splits a page among the processes that map it (the agent's binary
  # is mapped by its init and by every container of the image); its
  # anonymous part is what the container alone holds.
  read -r p a <<<"$(for pid in $pids; do cat "/proc/$pid/smaps_rollup" 2>/dev/null; done |
    awk '$1=="Pss:" {p+=$2} $1=="Pss_Anon:" {a+=$2} END {print int(p/1024), int(a/1024)}')"
  pss+=("$p") anon+=("$a")
  # The agent alone, and the ssh server it keeps, each on its own.
  for prog in agent sshd; do
    pid=$(docker top "$c" -o pid,args | awk -v p="$prog" 'NR>1 && ((p=="agent" && $2=="/usr/bin/deckhand") || (p=="sshd" && $2=="sshd:")) {print $1; exit}')
    [[ -n "$pid" ]] && awk -v p="$prog" '$1=="Rss:" {r=$2} $1=="Pss:" {s=$2} $1=="Pss_Anon:" {a=$2} END {printf "%s %d %d %d\n", p, r/1024, s/1024, a/1024}' "/proc/$pid/smaps_rollup" 2>/dev/null
  done >>"$WORK/procs"
done
read -r rm rp <<<"$(stats "${rss[@]}")"
read -r pm pp <<<"$(stats "${pss[@]}")"
read -r am ap <<<"$(stats "${anon[@]}")"
echo "   idle memory of each container's processes after 10 s (MiB): RSS summed median $rm, p95 $rp (all: ${rss[*]});"
echo "   PSS median $pm, p95 $pp; anonymous (the container's own) median $am, p95 $ap"
for prog in agent sshd; do
  col() { awk -v p="$prog" -v c="$1" '$1==p {print $c}' "$WORK/procs"; }
  [[ -n "$(col 2)" ]] || continue
  echo "   $prog process alone, median (MiB): RSS $(stats $(col 2) | cut -d' ' -f1), PSS $(stats $(col 3) | cut -d' ' -f1), anonymous $(stats $(col 4) | cut -d' ' -f1)"
done
jobs=()
for id in "${ids[@]}"; do
  api DELETE "/api/v1/containers/$id" >/dev/null &
  jobs+=($!)
done
wait "${jobs[@]}"
inst=$(cat "$WORK/inst")
left=$(( $(docker ps -aq --filter "label=deckhand.installation=$inst" --filter "label=deckhand.container" | wc -l) +
  $(docker volume ls -q --filter "label=deckhand.installation=$inst" | wc -l) ))
echo "   after deleting them: $left engine containers and volumes of this installation left"
