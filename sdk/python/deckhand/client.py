"""The control plane's client: every answer is verified before it is read."""

import json
import os
import stat
import time
import urllib.parse

from . import _openapi
from ._http import Transport
from ._signature import (BINDING_HEADER, HEADER, NONCE_HEADER, PUBLIC_KEY_PATH, Verifier, VerifyError,
                         check_envelope_status, new_nonce)
from .containers import Containers
from .errors import DeckhandError, SignatureError

API_VERSION = "v1"
MAX_ANSWER = 64 << 20
DEFAULT_PAGE_SIZE = 100


class Client:
    """Client of the control plane at base_url.

    token is a session token (login sets it) or an auth token (svc_...).
    now is the clock the replay window is judged by. containers creates,
    finds and drives containers; their handles send agent_token (default:
    token) to their agents, reached by agent_route: "proxy" (the platform
    proxy's per-service URLs, all connected to proxy_addr when given) or
    "agent_addr" (the record's agent address).
    """

    def __init__(self, base_url, token=None, timeout=60, now=time.time, agent_token=None, agent_route="proxy",
                 proxy_addr=None):
        if agent_route not in ("proxy", "agent_addr"):
            raise ValueError(f"deckhand: agent_route {agent_route!r}: must be 'proxy' or 'agent_addr'")
        self._http = Transport(base_url, timeout)
        self.base_url = self._http.base
        self.token = token
        self._verifier = Verifier(lambda: self._http.request("GET", PUBLIC_KEY_PATH), now)
        self.containers = Containers(self, agent_token, agent_route, proxy_addr)

    @classmethod
    def from_login(cls, **kw):
        """A client from the CLI's login file: $DECKHAND_CONFIG, else
        $XDG_CONFIG_HOME/deckhand/config.json, else ~/.config/deckhand/config.json."""
        path = os.environ.get("DECKHAND_CONFIG") or os.path.join(
            os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config"), "deckhand", "config.json")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise DeckhandError(0, "", f"no login at {path}: run `deckhand login` first, or pass a URL and a token") from None
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise DeckhandError(0, "", f"{path} is readable by others: it holds a secret; chmod 600 it")
        with open(path) as f:
            cfg = json.load(f)
        if not cfg.get("control_url"):
            raise DeckhandError(0, "", f"{path}: control_url: missing; run `deckhand login`")
        token = kw.pop("token", None) or (cfg.get("credential") or {}).get("token")
        if not token:
            raise DeckhandError(0, "", f"{path}: credential: missing; run `deckhand login`")
        return cls(cfg["control_url"], token=token, **kw)

    def close(self):
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def key_fetches(self):
        return self._verifier.fetches

    def raw(self, method, path, query=None, body=None, headers=None):
        """Sends one request and verifies the answer: its signature, its
        binding to this request (status, method, path, ETag, nonce, body) and
        that an envelope's statusCode is its status. Answers (status,
        headers, body)."""
        nonce = new_nonce()
        hdrs = {"Accept": "application/json", NONCE_HEADER: nonce}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        status, rh, raw = self._http.request(method, path, query, data, hdrs)
        if len(raw) > MAX_ANSWER:
            raise DeckhandError(status, "", "answer too large", method=method, path=path)
        signed_path = urllib.parse.quote(self._http.prefix + path, safe="/%:@!$&'()*+,;=-._~")
        try:
            self._verifier.verify(rh.get(HEADER, ""), signed_path, raw)
            self._verifier.verify_binding(rh.get(BINDING_HEADER, ""), status, method, signed_path, rh.get("ETag", ""), nonce, raw)
            check_envelope_status(status, raw)
        except VerifyError as e:
            raise SignatureError(method, path, str(e)) from None
        return status, rh, raw

    def request(self, method, path, query=None, body=None):
        """A JSON call: answers the envelope's data; 400+ raises DeckhandError."""
        status, _, raw = self.raw(method, path, query, body)
        if status >= 400:
            raise DeckhandError.from_body(method, path, status, raw)
        if not raw:
            return None
        return json.loads(raw).get("data")

    def call(self, operation_id, path_params=None, query=None, body=None):
        """Any operation of the control plane's document, by its operationId."""
        method, path = _openapi.resolve("control", operation_id, path_params)
        return self.request(method, path, query, body)

    # Accounts and tokens.

    def login(self, email, password):
        """Signs in and keeps the session token; answers the login result."""
        r = self.request("POST", "/api/v1/users/auth/login", body={"email": email, "password": password})
        if r.get("requires_2fa"):
            raise DeckhandError(200, "REQUIRES_2FA", "the account needs its second factor", method="POST",
                                path="/api/v1/users/auth/login")
        self.token = r["token"]
        return r

    def me(self):
        return self.request("GET", "/api/v1/users/auth/me")

    def create_token(self, alias, ip_whitelist=None):
        """A long-lived auth token (svc_...); its secret is in ["token"], shown once."""
        body = {"alias": alias}
        if ip_whitelist:
            body["ip_whitelist"] = list(ip_whitelist)
        return self.request("POST", "/api/v1/auth/tokens", body=body)

    # Wallet.

    def transfer_to_ai(self, amount, idempotency_key=None):
        body = {"amount": amount}
        if idempotency_key:
            body["idempotency_key"] = idempotency_key
        return self.request("POST", "/api/v1/wallet/transfer-to-ai", body=body)

    def pages(self, path, key, page_size=0, query=None):
        """Iterates over every item of a paginated list (data[key] with a
        pagination object: transactions, invoices, ai-fees, events, images,
        projects, containers), a page at a time."""
        page = 1
        while True:
            q = dict(query or {})
            q.update(page=page, limit=page_size or DEFAULT_PAGE_SIZE)
            data = self.request("GET", path, q)
            items = data.get(key) or []
            yield from items
            total_pages = (data.get("pagination") or {}).get("totalPages") or 0
            if not items or page >= total_pages:
                return
            page += 1

    def transactions(self, page_size=0):
        """Iterates over the wallet's transactions, newest first, a page at a time."""
        return self.pages("/api/v1/wallet/transactions", "transactions", page_size)

    def invoices(self, page_size=0):
        return self.pages("/api/v1/wallet/invoices", "invoices", page_size)

    def generate_invoice(self, transaction_id):
        return self.request("POST", "/api/v1/wallet/invoices/generate/" + urllib.parse.quote(transaction_id, safe=""))

    def invoice_pdf(self, invoice_id):
        """The invoice's PDF bytes (verified)."""
        path = "/api/v1/wallet/invoices/" + urllib.parse.quote(invoice_id, safe="") + "/pdf"
        status, _, raw = self.raw("GET", path)
        if status >= 400:
            raise DeckhandError.from_body("GET", path, status, raw)
        return raw
