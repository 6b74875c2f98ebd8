"""The control plane's client: every answer is verified before it is read."""

import json
import time
import urllib.parse

from . import _openapi
from ._http import Transport
from ._signature import HEADER, PUBLIC_KEY_PATH, Verifier, VerifyError
from .errors import DeckhandError, SignatureError

API_VERSION = "v1"
MAX_ANSWER = 64 << 20
DEFAULT_PAGE_SIZE = 100


class Client:
    """Client of the control plane at base_url.

    token is a session token (login sets it) or an auth token (svc_...).
    now is the clock the replay window is judged by.
    """

    def __init__(self, base_url, token=None, timeout=60, now=time.time):
        self._http = Transport(base_url, timeout)
        self.base_url = self._http.base
        self.token = token
        self._verifier = Verifier(lambda: self._http.request("GET", PUBLIC_KEY_PATH), now)

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
        """Sends one request and verifies the answer: (status, headers, body)."""
        hdrs = {"Accept": "application/json"}
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
