"""Verification of the control plane's X-Service-Signature.

    X-Service-Signature: t=<unix_ts>,kid=<key_id>,path=<url_path>,sig=<128 hex>

The signed data is b"<t>." + body, signed with the ED25519 key kid of the
set at /api/v1/meta/public-key. The set is kept 24 hours, fetched again
when an answer names a kid it lacks (at most once per 5 s for unknown
kids), and t must be within 300 s of this machine's clock.
"""

import base64
import hashlib
import json
import os
import threading
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

HEADER = "X-Service-Signature"
NONCE_HEADER = "X-Service-Nonce"
BINDING_HEADER = "X-Service-Binding"
PUBLIC_KEY_PATH = "/api/v1/meta/public-key"
KEY_CACHE_TTL = 24 * 3600
REPLAY_TOLERANCE = 300
MIN_REFETCH = 5


class VerifyError(Exception):
    pass


def new_nonce():
    """24 characters of base64url from 18 random bytes, fresh per request."""
    return base64.urlsafe_b64encode(os.urandom(18)).decode()


def binding_data(t, status, method, path, etag, nonce, body):
    """The signed data of a binding, one field a line: deckhand-binding-v1,
    t, status, method, path, ETag, nonce, hex SHA-256 of the body."""
    fields = ["deckhand-binding-v1", str(t), str(status), method, path, etag, nonce, hashlib.sha256(body).hexdigest()]
    return "\n".join(fields).encode()


def parse_binding(value):
    if not value:
        raise VerifyError("missing " + BINDING_HEADER + " header on an answer that was asked for one")
    parts = value.split(",")
    names = ("t=", "kid=", "status=", "sig=")
    if len(parts) != 4 or not all(p.startswith(n) for p, n in zip(parts, names)):
        raise VerifyError("malformed " + BINDING_HEADER + " header")
    ts, kid, status, sig_hex = (p.split("=", 1)[1] for p in parts)
    if not ts.isdigit() or not kid or len(status) != 3 or not status.isdigit():
        raise VerifyError("malformed " + BINDING_HEADER + " header")
    try:
        sig = bytes.fromhex(sig_hex)
    except ValueError:
        raise VerifyError("malformed " + BINDING_HEADER + " header: sig is not hex")
    if len(sig) != 64:
        raise VerifyError("malformed " + BINDING_HEADER + " header: sig is not 64 bytes")
    return int(ts), kid, int(status), sig


def check_envelope_status(status, body):
    """Refuses a control-plane envelope whose statusCode is not the status
    it came with."""
    if not body or body[:1] != b"{":
        return
    try:
        code = json.loads(body).get("statusCode")
    except (ValueError, AttributeError):
        return
    if isinstance(code, int) and code != status:
        raise VerifyError(f"the answer's status is not the one signed: the signed body says {code}, the answer came as {status}")


def parse(value):
    if not value:
        raise VerifyError("missing " + HEADER + " header")
    if not value.startswith("t="):
        raise VerifyError("malformed signature: must start with t=")
    rest = value[2:]
    ts, sep, rest = rest.partition(",kid=")
    if not sep or not ts.isdigit():
        raise VerifyError("malformed signature: t")
    kid, sep, rest = rest.partition(",path=")
    if not sep or not kid:
        raise VerifyError("malformed signature: kid")
    i = rest.rfind(",sig=")
    if i < 0:
        raise VerifyError("malformed signature: sig missing")
    path, sig_hex = rest[:i], rest[i + 5:]
    try:
        sig = bytes.fromhex(sig_hex)
    except ValueError:
        raise VerifyError("malformed signature: sig is not hex")
    if len(sig) != 64:
        raise VerifyError("malformed signature: sig is not 64 bytes")
    return int(ts), kid, path, sig


class Verifier:
    def __init__(self, fetch, now=time.time):
        self._fetch = fetch  # () -> (status, headers, body)
        self._now = now
        self._lock = threading.Lock()
        self._keys = None
        self._fetched_at = 0.0
        self._unknown_at = 0.0
        self.fetches = 0

    def verify(self, header, path, body):
        t, kid, signed_path, sig = parse(header)
        if signed_path != path:
            raise VerifyError(f"signed path {signed_path!r} differs from the requested {path!r}")
        if abs(self._now() - t) > REPLAY_TOLERANCE:
            raise VerifyError(f"signature timestamp t={t} outside the replay window")
        key = self._key(kid)
        try:
            key.verify(sig, str(t).encode() + b"." + body)
        except InvalidSignature:
            raise VerifyError("signature does not verify")

    def verify_binding(self, header, status, method, path, etag, nonce, body):
        """Checks an answer's X-Service-Binding against the request that asked
        for it: the status first, the replay window, then the signature."""
        t, kid, signed_status, sig = parse_binding(header)
        if signed_status != status:
            raise VerifyError(f"the answer's status is not the one signed: signed {signed_status}, received {status}")
        if abs(self._now() - t) > REPLAY_TOLERANCE:
            raise VerifyError(f"binding timestamp t={t} outside the replay window")
        key = self._key(kid)
        try:
            key.verify(sig, binding_data(t, status, method, path, etag, nonce, body))
        except InvalidSignature:
            raise VerifyError("the binding (status, method, path, ETag, nonce or body) differs from what was signed")

    def _key(self, kid):
        with self._lock:
            now = self._now()
            keys = self._keys
            fresh = keys is not None and now - self._fetched_at < KEY_CACHE_TTL
            if keys is not None and kid in keys and fresh:
                return keys[kid]
            unknown = keys is not None and kid not in keys
            if unknown and now - self._unknown_at < MIN_REFETCH:
                raise VerifyError(f"signed with an unknown key {kid!r}")
            try:
                self._keys = self._load()
                self._fetched_at = now
            except VerifyError:
                if keys is not None and kid in keys:
                    return keys[kid]  # a failed refresh keeps the keys it had
                raise
            finally:
                self.fetches += 1
                if unknown:
                    self._unknown_at = now
            if kid not in self._keys:
                raise VerifyError(f"signed with an unknown key {kid!r}")
            return self._keys[kid]

    def _load(self):
        status, headers, body = self._fetch()
        if status != 200:
            raise VerifyError(f"fetch the key set: status {status}")
        keys = {}
        for k in json.loads(body)["data"]["keys"]:
            raw = bytes.fromhex(k["public_key_hex"])
            if k.get("algorithm") != "ed25519" or len(raw) != 32:
                raise VerifyError(f"key {k.get('kid')!r} is not a 32-byte ed25519 key")
            keys[k["kid"]] = Ed25519PublicKey.from_public_bytes(raw)
        # The set is itself signed: it must verify with a key it holds.
        t, kid, _, sig = parse(headers.get(HEADER, ""))
        if kid not in keys:
            raise VerifyError("the key set is not signed by a key it holds")
        try:
            keys[kid].verify(sig, str(t).encode() + b"." + body)
        except InvalidSignature:
            raise VerifyError("the key set's signature does not verify")
        return keys
