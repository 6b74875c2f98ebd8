"""A small HTTP layer on http.client: one kept-alive connection per
thread and base URL, reopened once when the server closed it."""

import http.client
import threading
import urllib.parse


class Transport:
    def __init__(self, base_url, timeout=60, connect_to=None):
        """connect_to (host:port), when set, is where connections go, with
        the URL's host in the Host header: a platform proxy whose names DNS
        does not resolve."""
        u = urllib.parse.urlsplit(base_url.strip())
        if u.scheme not in ("http", "https") or not u.hostname or u.query:
            raise ValueError(f"deckhand: URL {base_url!r}: must be http:// or https:// with a host")
        self.base = urllib.parse.urlunsplit((u.scheme, u.netloc, u.path.rstrip("/"), "", ""))
        self.prefix = u.path.rstrip("/")
        self._scheme, self._netloc = u.scheme, u.netloc
        self.timeout = timeout
        self.connect_to = connect_to
        self._local = threading.local()

    def _conn(self, fresh=False):
        c = getattr(self._local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            c = cls(self.connect_to or self._netloc, timeout=self.timeout)
            self._local.conn = c
        return c

    def open(self, method, path, query=None, body=None, headers=None):
        """Sends a request; answers the http.client response (read it whole
        or close it before the next request on this thread)."""
        target = self.prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(query, doseq=True)
        hdrs = dict(headers or {})
        if self.connect_to:
            hdrs.setdefault("Host", self._netloc)
        for attempt in (0, 1):
            conn = self._conn(fresh=attempt == 1)
            reused = getattr(conn, "deckhand_used", False)
            try:
                conn.request(method, target, body=body, headers=hdrs)
                resp = conn.getresponse()
                conn.deckhand_used = True
                return resp
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop()
                # A kept-alive connection the server closed while idle: send
                # once more on a new one, unless the body was a stream (spent)
                # or the request may have been acted on (not idempotent).
                idempotent = method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")
                if attempt == 1 or not reused or not idempotent or (body is not None and not isinstance(body, (bytes, str))):
                    raise
            except Exception:
                self._drop()
                raise

    def request(self, method, path, query=None, body=None, headers=None):
        """Answers (status, headers, body bytes)."""
        resp = self.open(method, path, query, body, headers)
        try:
            data = resp.read()
        except Exception:
            self._drop()
            raise
        return resp.status, resp.headers, data

    def _drop(self):
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None

    def close(self):
        self._drop()
