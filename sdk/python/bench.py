"""Per-call cost of a signed GET /api/v1/users/auth/me: raw http.client
(one kept-alive connection, body read and decoded, no signature check),
raw with the answer checked by hand, and the SDK's Client.me, interleaved in rounds so
both see the same server and load. Prints the median µs per call of each.

Run by `go test -run '^$' -bench MePython` in sdk/go, which starts the
binaries and passes DECKHAND_CONTROL_URL, DECKHAND_EMAIL, DECKHAND_PASSWORD.
"""

import base64
import hashlib
import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
import deckhand  # noqa: E402

ROUNDS, CALLS = 15, 200

c = deckhand.Client(os.environ["DECKHAND_CONTROL_URL"])
c.login(os.environ["DECKHAND_EMAIL"], os.environ["DECKHAND_PASSWORD"])
u = urllib.parse.urlsplit(os.environ["DECKHAND_CONTROL_URL"])
conn = http.client.HTTPConnection(u.netloc)
hdrs = {"Authorization": "Bearer " + c.token, "Accept": "application/json"}


def raw():
    conn.request("GET", "/api/v1/users/auth/me", headers=hdrs)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200
    return json.loads(body)["data"]


from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: E402

conn.request("GET", "/api/v1/meta/public-key")
key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(json.loads(conn.getresponse().read())["data"]["keys"][0]["public_key_hex"]))


def raw_verify():
    """What a careful raw client does: the answer checked by hand as the SDK
    checks it (signature, binding to a fresh nonce, envelope status)."""
    nonce = base64.urlsafe_b64encode(os.urandom(18)).decode()
    conn.request("GET", "/api/v1/users/auth/me", headers=dict(hdrs, **{"X-Service-Nonce": nonce}))
    r = conn.getresponse()
    body = r.read()
    h = r.headers["X-Service-Signature"]
    t = h[2:h.index(",")]
    key.verify(bytes.fromhex(h[h.rindex(",sig=") + 5:]), t.encode() + b"." + body)
    bt, _, _, bsig = r.headers["X-Service-Binding"].split(",")
    data = "\n".join(["deckhand-binding-v1", bt[2:], "200", "GET", "/api/v1/users/auth/me", "", nonce,
                      hashlib.sha256(body).hexdigest()])
    key.verify(bytes.fromhex(bsig[4:]), data.encode())
    env = json.loads(body)
    assert env["statusCode"] == r.status
    return env["data"]


def sdk():
    return c.me()


res = {"raw": [], "raw+verify": [], "sdk": []}
for _ in range(3):
    raw(), raw_verify(), sdk()
for _ in range(ROUNDS):
    for name, fn in (("raw", raw), ("raw+verify", raw_verify), ("sdk", sdk)):
        t = time.perf_counter()
        for _ in range(CALLS):
            fn()
        res[name].append((time.perf_counter() - t) / CALLS * 1e6)
for name, v in res.items():
    print(name, "%.1f" % statistics.median(v))
