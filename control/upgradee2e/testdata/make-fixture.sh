#!/usr/bin/env bash
# Makes kv-store.jsonl: the store a control plane of the layout before
# declared tables (every bucket a set of kv rows; commit 646e3c4) writes
# for a small scenario — an account with money, transfers, an invoice,
# images, a project with a container and its events — dumped row by row
# from its PostgreSQL kv table. The upgrade test loads it into either
# engine and starts the current binary on it.
#
# Usage: make-fixture.sh OLD_DECKHAND_CONTROL   (built from that commit:
#   git archive 646e3c4 | tar -x -C /tmp/old && (cd /tmp/old && go build ./control/cmd/deckhand-control))
set -euo pipefail
OLD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d); chmod 755 "$WORK"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PORT=18391
mkdir -p "$WORK/pg"; [[ $(id -u) == 0 ]] && chown postgres "$WORK/pg"
as_pg "$PGBIN/initdb" -D "$WORK/pg" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -w -l "$WORK/pg/log" -o "-p $PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
SRV=""
trap '{ [[ -n $SRV ]] && kill $SRV; } 2>/dev/null || true; as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null; rm -rf "$WORK"' EXIT
as_pg "$PGBIN/createdb" -h 127.0.0.1 -p $PORT -U postgres deckhand
URL="postgres://postgres@127.0.0.1:$PORT/deckhand?sslmode=disable"
install -m 600 "$HERE/master.key" "$WORK/master.key"
"$OLD" serve --listen 127.0.0.1:18390 --data "$WORK/data" --database-url "$URL" --master-key-file "$WORK/master.key" \
  --admin-email root@example.com --admin-password Admin-pass-123 --log-level error >/dev/null 2>"$WORK/err" &
SRV=$!
for _ in $(seq 300); do curl -sf http://127.0.0.1:18390/health >/dev/null && break; sleep 0.1; done
curl -sf http://127.0.0.1:18390/health >/dev/null || { cat "$WORK/err"; exit 1; }
python3 - <<'PY'
import json, urllib.request, urllib.error
B = "http://127.0.0.1:18390"
def call(method, path, body=None, tok=None):
    req = urllib.request.Request(B + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"content-type": "application/json", **({"authorization": "Bearer " + tok} if tok else {})})
    try:
        with urllib.request.urlopen(req) as r:
            return json.load(r).get("data")
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{method} {path}: {e.code} {e.read().decode()}")
login = lambda e, p: call("POST", "/api/v1/users/auth/login", {"email": e, "password": p})["token"]
admin = login("root@example.com", "Admin-pass-123")
ann = call("POST", "/api/v1/admin/users", {"email": "ann@example.com", "password": "Ann-pass-123456", "verified": True}, admin)["id"]
tok = login("ann@example.com", "Ann-pass-123456")
call("POST", "/api/v1/admin/wallet/credit", {"user_id": ann, "amount": "100.00", "reason": "fixture"}, admin)
t1 = call("POST", "/api/v1/wallet/transfer-to-ai", {"amount": "10.00", "idempotency_key": "k1"}, tok)["transaction_id"]
call("POST", "/api/v1/wallet/transfer-to-ai", {"amount": "5.00"}, tok)
call("POST", "/api/v1/wallet/invoices/generate/" + t1, None, tok)
for alias, price in (("debian/12", 4.5), ("alpine/3", 0)):
    call("POST", "/api/v1/admin/images", {"alias": alias, "image_name": alias, "os": "Linux", "architecture": "amd64", "price": price, "tags": ["base"]}, admin)
pid = call("POST", "/api/v1/projects", {"name": "Fixture"}, tok)["id"]
call("POST", "/api/v1/admin/containers", {"project_id": pid, "name": "one", "id": "cold1"}, admin)
for _ in range(3):
    call("POST", "/api/v1/admin/events", {"event_type": "container.running", "container_id": "cold1", "project_id": pid, "user_id": ann}, admin)
PY
kill $SRV; wait $SRV 2>/dev/null || true
psql "$URL" -At -c "SELECT json_build_object('b', bucket, 'k', key, 'v', value, 'r', encode(raw, 'base64')) FROM kv ORDER BY bucket, key" >"$HERE/kv-store.jsonl"
psql "$URL" -At -c "SELECT json_build_object('b', bucket, 'seq', n) FROM kv_seq ORDER BY bucket" >>"$HERE/kv-store.jsonl"
wc -l "$HERE/kv-store.jsonl"
