#!/usr/bin/env bash
# Gateway throughput and added latency, side by side with nginx in one run.
#
# Starts the real agent (bin/deckhand run --services files, free ports, a
# temporary data dir) and nginx as a reverse proxy in front of the same files
# service (2 workers, upstream keepalive 64, proxy_http_version 1.1, in the
# foreground, config/pid/logs in a temp dir), then runs wrk against
# GET /api/v1/version through four paths, interleaved, for several rounds:
#   direct   the files service's own port (Fiber/fasthttp)
#   path     the gateway by path, /_/files/api/v1/version
#   host     the gateway by Host, p-c-files-1.srv.localhost
#   nginx    nginx in front of the service's port
# Phase 1 (throughput): wrk -t2 -c32 -d5s --latency.
# Phase 2 (added latency without queueing): wrk -t1 -c1 -d5s --latency.
# Prints medians of req/s, p50, p99 and CPU per request (agent + nginx
# workers, from /proc) per path, the gateway/nginx ratios, the added p99
# (proxy p99 - direct p99 of the same phase) and the proxy's own CPU per
# request (proxy path - direct).
#
# With BEFORE=/path/to/an/older/deckhand, a second agent from that binary
# runs too and its gateway (by path) is measured as "before", in the same
# rounds: before and after side by side.
#
# With ISOLATE=files the files service runs as a child process of the
# agent (--isolate files), as it does behind nginx's own processes: the
# proxies then compare on equal terms (each in its own processes; by
# default the gateway shares one Go runtime with the in-process service).
#
# Usage: [BEFORE=bin] [ISOLATE=files] scripts/bench/gateway.sh [rounds=5] [duration=5s]
# Needs wrk and nginx: scripts/setup.sh --bench. Uses bin/deckhand when it
# exists (make build), else builds one into the temp dir.
set -euo pipefail
ROUNDS=${1:-5}
DUR=${2:-5s}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
cd "$ROOT"
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || { echo "gateway.sh: $tool is needed: scripts/setup.sh --bench" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# A port base whose gateway, files (+2), nginx (+20) and the "before"
# agent's (+40, +42) ports are free.
BASE=""
for _ in $(seq 50); do
  b=$((20000 + RANDOM % 12000)) # below the ephemeral range (32768-): no client socket holds it
  if free "$b" && free $((b + 2)) && free $((b + 20)) && free $((b + 40)) && free $((b + 42)); then BASE=$b; break; fi
done
[[ -n "$BASE" ]] || { echo "gateway.sh: no free port base" >&2; exit 1; }
GW=$BASE FILES=$((BASE + 2)) NG=$((BASE + 20))

BIN="$ROOT/bin/deckhand"
if [[ ! -x "$BIN" ]]; then
  CGO_ENABLED=0 go build -o "$WORK/deckhand" ./agent/cmd/deckhand
  BIN="$WORK/deckhand"
fi
ISO=(--isolate "${ISOLATE:-none}")
"$BIN" run --data "$WORK/data" --listen 127.0.0.1:$GW --port-base $BASE --services files "${ISO[@]}" \
  --project-id p --container-id c --domain localhost --log-level error >"$WORK/agent.log" 2>&1 &
AGENT=$!
PIDS+=($AGENT)
if [[ -n "${BEFORE:-}" ]]; then
  "$BEFORE" run --data "$WORK/data-before" --listen 127.0.0.1:$((BASE + 40)) --port-base $((BASE + 40)) --services files "${ISO[@]}" \
    --log-level error >"$WORK/before.log" 2>&1 &
  BEFORE_PID=$!
  PIDS+=($BEFORE_PID)
fi

mkdir -p "$WORK/nginx"
# nginx's workers run as the agent's user: the agent treats a loopback
# connection of another local user as a stranger (--trusted-uids).
cat >"$WORK/nginx/nginx.conf" <<EOF
user $(id -un);
worker_processes 2;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  upstream files { server 127.0.0.1:$FILES; keepalive 64; }
  server {
    listen 127.0.0.1:$NG;
    location / {
      proxy_pass http://files;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:$FILES;
    }
  }
}
EOF
"$NGINX" -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' &
NGINX_MASTER=$!
PIDS+=($NGINX_MASTER)

HOSTNAME_ROUTE="p-c-files-1.srv.localhost"
declare -A URL=(
  [direct]="http://127.0.0.1:$FILES/api/v1/version"
  [path]="http://127.0.0.1:$GW/_/files/api/v1/version"
  [host]="http://127.0.0.1:$GW/api/v1/version"
  [nginx]="http://127.0.0.1:$NG/api/v1/version"
)
hdr() { [[ $1 == host ]] && echo "Host: $HOSTNAME_ROUTE" || echo "X-Bench: 1"; }
NAMES=(direct path host nginx)
if [[ -n "${BEFORE:-}" ]]; then
  URL[before]="http://127.0.0.1:$((BASE + 40))/_/files/api/v1/version"
  NAMES+=(before)
fi

for n in "${NAMES[@]}"; do
  ok=""
  for _ in $(seq 200); do
    if curl -sf -H "$(hdr "$n")" "${URL[$n]}" >/dev/null; then ok=1; break; fi
    sleep 0.05
  done
  [[ -n "$ok" ]] || { echo "gateway.sh: $n (${URL[$n]}) does not answer" >&2; cat "$WORK/agent.log" "$WORK/nginx/error.log" >&2; exit 1; }
done

# CPU time (clock ticks) of the agents (gateway + files service, and its
# child with ISOLATE) and the nginx workers (the ones not under test idle): CPU per request is the cost that load on the machine does
# not distort, unlike req/s and p99.
TICK_US=$((1000000 / $(getconf CLK_TCK)))
cpu() { local t=0 p; for p in $AGENT $(pgrep -P "$AGENT") ${BEFORE_PID:-} ${BEFORE_PID:+$(pgrep -P "$BEFORE_PID")} $(pgrep -P "$NGINX_MASTER"); do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }

# wrk latencies come as 812.00us, 1.23ms or 1.01s: print milliseconds.
ms() { awk -v v="$1" 'BEGIN{ if (v ~ /us$/) printf "%.3f", v/1000; else if (v ~ /ms$/) printf "%.3f", v+0; else if (v ~ /s$/) printf "%.3f", v*1000; else print v }'; }
median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2 }'; }

phase() { # name threads conns
  local ph=$1 t=$2 c=$3
  echo "== phase $ph: wrk -t$t -c$c -d$DUR --latency, $ROUNDS rounds interleaved (${NAMES[*]})"
  for r in $(seq "$ROUNDS"); do
    for n in "${NAMES[@]}"; do
      c0=$(cpu)
      out=$(wrk -t"$t" -c"$c" -d"$DUR" --latency -H "$(hdr "$n")" "${URL[$n]}")
      c1=$(cpu)
      if grep -q 'Non-2xx' <<<"$out"; then echo "gateway.sh: $n answered non-2xx:" >&2; echo "$out" >&2; exit 1; fi
      rps=$(awk '/^Requests\/sec/{print $2}' <<<"$out")
      p50=$(ms "$(awk '$1=="50%"{print $2}' <<<"$out")")
      p99=$(ms "$(awk '$1=="99%"{print $2}' <<<"$out")")
      reqs=$(awk '/requests in/{print $1}' <<<"$out")
      cus=$(awk -v d=$((c1 - c0)) -v u="$TICK_US" -v n="$reqs" 'BEGIN{printf "%.2f", d*u/n}')
      echo "$rps" >>"$WORK/$ph.$n.rps"; echo "$p50" >>"$WORK/$ph.$n.p50"; echo "$p99" >>"$WORK/$ph.$n.p99"; echo "$cus" >>"$WORK/$ph.$n.cpu"
      printf '   round %d %-6s %10s req/s  p50 %7s ms  p99 %7s ms  cpu %6s us/req\n' "$r" "$n" "$rps" "$p50" "$p99" "$cus"
    done
  done
  echo "medians (cpu = agent + nginx workers, per request):"
  printf '%-8s %12s %10s %10s %12s\n' path "req/s" "p50 ms" "p99 ms" "cpu us/req"
  for n in "${NAMES[@]}"; do
    for k in rps p50 p99 cpu; do eval "M_${k}_$n=\$(median <\"$WORK/$ph.$n.$k\")"; done
    eval "printf '%-8s %12s %10s %10s %12s\n' $n \$M_rps_$n \$M_p50_$n \$M_p99_$n \$M_cpu_$n"
  done
  awk -v p="$M_rps_path" -v h="$M_rps_host" -v n="$M_rps_nginx" -v d="$M_rps_direct" \
    -v pp="$M_p99_path" -v hp="$M_p99_host" -v np="$M_p99_nginx" -v dp="$M_p99_direct" 'BEGIN{
      printf "ratio req/s gateway/nginx: path %.2f, host %.2f   (gateway/direct: path %.2f, nginx/direct %.2f)\n", p/n, h/n, p/d, n/d
      printf "added p99 over direct: path %.3f ms, host %.3f ms, nginx %.3f ms\n", pp-dp, hp-dp, np-dp }'
  awk -v p="$M_cpu_path" -v h="$M_cpu_host" -v n="$M_cpu_nginx" -v d="$M_cpu_direct" 'BEGIN{
      printf "proxy CPU per request (minus direct): path %.2f us, host %.2f us, nginx %.2f us\n", p-d, h-d, n-d }'
  if [[ -n "${BEFORE:-}" ]]; then
    awk -v b="$M_rps_before" -v p="$M_rps_path" -v n="$M_rps_nginx" -v bc="$M_cpu_before" -v d="$M_cpu_direct" 'BEGIN{
      printf "before (the older gateway by path): %.2f of nginx; now/before %.2f; its proxy CPU per request %.2f us\n", b/n, p/b, bc-d }'
  fi
}

echo "isolate: ${ISOLATE:-none}; agent $("$BIN" version 2>/dev/null | head -1), nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
phase throughput 2 32
phase latency 1 1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
