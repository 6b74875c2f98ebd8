#!/usr/bin/env bash
# File service figures, side by side with nginx in one run (medians of N):
#   1. download of a 1 GiB file: nginx (sendfile) vs the files service
#      directly vs through the agent's gateway (/_/files/...);
#   2. upload of the same 1 GiB: nginx's dav module PUT vs the files service
#      (raw PUT: streamed to a temporary, fsynced, renamed) vs through the gateway;
#   3. listing a folder of 100,000 files: nginx autoindex (names, sizes, mtimes)
#      vs GET /api/v1/files (plus mode, owner, group, etag) vs `ls -l`.
# The file sits in the page cache for every reader; curl writes to /dev/null.
# Usage: scripts/bench/files.sh [runs=5]
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
chmod 755 "$WORK"
BASE=${BASE:-27600}
NGINX_PORT=$((BASE + 50))
FILES=$((BASE + 2))
cleanup() {
  [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  [[ -f "$WORK/nginx.pid" ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$ROOT"
command -v nginx >/dev/null || { echo "nginx is needed: scripts/setup.sh --bench" >&2; exit 1; }

mkdir -p "$WORK/root/many" "$WORK/root/up" "$WORK/ngx/tmp"
dd if=/dev/urandom of="$WORK/root/1g.bin" bs=1M count=1024 status=none
cat "$WORK/root/1g.bin" >/dev/null
python3 - "$WORK/root/many" <<'PY'
import os, sys
d = sys.argv[1]
for i in range(100000):
    open(os.path.join(d, "file-%06d.txt" % i), "w").close()
PY

USERLINE=""
[[ $(id -u) -eq 0 ]] && USERLINE="user root;"
cat >"$WORK/nginx.conf" <<NGX
$USERLINE
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/ngx/error.log;
events { worker_connections 256; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $WORK/ngx/tmp;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $WORK/root;
    location /up/ { dav_methods PUT; create_full_put_path on; }
    location /many/ { autoindex on; autoindex_format json; }
  }
}
NGX
nginx -c "$WORK/nginx.conf" -p "$WORK/ngx"

CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$WORK/deckhand" ./agent/cmd/deckhand
"$WORK/deckhand" run --data "$WORK/data" --listen 127.0.0.1:$BASE --port-base $BASE \
  --files-root "$WORK/root" --services files --log-level error >/dev/null 2>&1 &
PID=$!
for _ in $(seq 200); do curl -sf http://127.0.0.1:$BASE/_/files/api/v1/version >/dev/null && break; sleep 0.05; done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# speed URL -> bytes/s of one download
dl() { curl -s -o /dev/null -w '%{speed_download}\n' "$1"; }
ul() { curl -s -o /dev/null -T "$WORK/root/1g.bin" -w '%{speed_upload}\n' "$1"; }
lt() { curl -s -o /dev/null -w '%{time_total}\n' "$1"; }

declare -A R
run() { # name command...
  local name=$1; shift
  R[$name]+="$("$@") "
}
NGX_DL=http://127.0.0.1:$NGINX_PORT/1g.bin
DH_DL="http://127.0.0.1:$FILES/api/v1/files/content?path=/1g.bin"
GW_DL="http://127.0.0.1:$BASE/_/files/api/v1/files/content?path=/1g.bin"
NGX_UL=http://127.0.0.1:$NGINX_PORT/up/1g.bin
DH_UL="http://127.0.0.1:$FILES/api/v1/files/content?path=/up/1g-dh.bin"
GW_UL="http://127.0.0.1:$BASE/_/files/api/v1/files/content?path=/up/1g-gw.bin"
NGX_LS=http://127.0.0.1:$NGINX_PORT/many/
DH_LS="http://127.0.0.1:$FILES/api/v1/files?path=/many&limit=1000000"
for i in $(seq "$RUNS"); do
  run ngx_dl dl "$NGX_DL"; run dh_dl dl "$DH_DL"; run gw_dl dl "$GW_DL"
  run ngx_ul ul "$NGX_UL"; run dh_ul ul "$DH_UL"; run gw_ul ul "$GW_UL"
  run ngx_ls lt "$NGX_LS"; run dh_ls lt "$DH_LS"
  R[ls_l]+="$( { TIMEFORMAT=%R; time ls -l "$WORK/root/many" >/dev/null; } 2>&1 ) "
done
med() { tr ' ' '\n' | { grep -v '^$' || true; } | median; }
gbs() { awk -v v="$1" 'BEGIN {printf "%.2f GB/s", v/1e9}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", 100*a/b}'; }
declare -A M
for k in "${!R[@]}"; do M[$k]=$(echo "${R[$k]}" | med); done
echo "runs: $RUNS, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== download 1 GiB: curl -s -o /dev/null -w '%{speed_download}' URL"
echo "nginx (sendfile)          $(gbs "${M[ngx_dl]}")"
echo "files service, direct     $(gbs "${M[dh_dl]}")  $(ratio "${M[dh_dl]}" "${M[ngx_dl]}") of nginx"
echo "files via gateway /_/files $(gbs "${M[gw_dl]}")  $(ratio "${M[gw_dl]}" "${M[ngx_dl]}") of nginx"
echo "== upload 1 GiB: curl -s -o /dev/null -T 1g.bin -w '%{speed_upload}' URL"
echo "nginx dav PUT             $(gbs "${M[ngx_ul]}")"
echo "files service, direct     $(gbs "${M[dh_ul]}")  $(ratio "${M[dh_ul]}" "${M[ngx_ul]}") of nginx"
echo "files via gateway         $(gbs "${M[gw_ul]}")  $(ratio "${M[gw_ul]}" "${M[ngx_ul]}") of nginx"
echo "== list 100,000 files: curl -s -o /dev/null -w '%{time_total}' URL"
echo "nginx autoindex (json)    ${M[ngx_ls]} s"
echo "GET /api/v1/files         ${M[dh_ls]} s"
echo "ls -l                     ${M[ls_l]} s"
