"""Typed errors: the server's status, code and message."""

import json


class DeckhandError(Exception):
    """An answer with a status of 400 or more.

    code is the server's code: the control plane's envelope `error`, or a
    container service's `code` (INVALID, NOT_FOUND ...); details is a
    container service's details (often the field at fault).
    """

    def __init__(self, status, code, message, details="", method="", path=""):
        super().__init__(f"deckhand: {method} {path}: {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.method = method
        self.path = path

    @classmethod
    def from_body(cls, method, path, status, raw):
        code, message, details = "", "", ""
        try:
            body = json.loads(raw)
            if isinstance(body, dict):
                code = body.get("code") or (body.get("error") if isinstance(body.get("error"), str) else "") or ""
                message = body.get("message") or ""
                d = body.get("details")
                details = d if isinstance(d, str) else ("" if d is None else json.dumps(d))
        except ValueError:
            pass
        if not message:
            message = raw.decode("utf-8", "replace").strip()[:512] or str(status)
        return cls(status, code, message, details, method, path)


class SignatureError(Exception):
    """A control-plane answer without a valid signature: altered on the way
    or not from the control plane. Nothing of it is returned."""

    def __init__(self, method, path, reason):
        super().__init__(f"deckhand: refusing the answer to {method} {path}: {reason}")
        self.method = method
        self.path = path
        self.reason = reason
