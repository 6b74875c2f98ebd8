"""The Python SDK's contract tests run against the real binaries: the Go
harness (sdk/go, TestPythonSDK) starts deckhand-control and an agent and
passes their URLs in the environment."""

import os
import socket
import sys
import threading
import uuid

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import deckhand  # noqa: E402

CONTROL = os.environ.get("DECKHAND_CONTROL_URL")
GATEWAY = os.environ.get("DECKHAND_GATEWAY_URL")
ADMIN_EMAIL = os.environ.get("DECKHAND_ADMIN_EMAIL")
ADMIN_PASSWORD = os.environ.get("DECKHAND_ADMIN_PASSWORD")
PASSWORD = os.environ.get("DECKHAND_PASSWORD")

if not CONTROL or not GATEWAY:
    pytest.exit("DECKHAND_CONTROL_URL and DECKHAND_GATEWAY_URL are unset: run through `go test` in sdk/go (TestPythonSDK)", 2)


_admin = []


def admin():
    """The admin's client, signed in once (logins are rate-limited per IP)."""
    if not _admin:
        c = deckhand.Client(CONTROL)
        c.login(ADMIN_EMAIL, ADMIN_PASSWORD)
        _admin.append(c)
    return _admin[0]


def new_user(credit=None):
    """A verified user made through the admin API, with credit; answers a
    signed-in Client."""
    admin_ = admin()
    email = f"py-{uuid.uuid4().hex[:10]}@example.com"
    u = admin_.call("adminCreateUser", body={"email": email, "password": PASSWORD, "verified": True})
    if credit:
        admin_.call("creditBalance", body={"user_id": u["id"], "amount": credit, "reason": "python sdk test"})
    c = deckhand.Client(CONTROL)
    c.login(email, PASSWORD)
    c.email = email
    return c


class Proxy:
    """A TCP proxy that a test can make misbehave: cut every open
    connection, cut once after n bytes, or rewrite the server's bytes."""

    def __init__(self, target_url):
        host, port = target_url.split("://", 1)[1].split(":")
        self.target = (host, int(port))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.conns = []
        self.dials = 0
        self.cut_after = 0
        self.moved = 0
        self.rewrite = None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            s = socket.create_connection(self.target)
            with self.lock:
                self.conns += [c, s]
                self.dials += 1
            threading.Thread(target=self._pipe, args=(c, s, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c, True), daemon=True).start()

    def _pipe(self, src, dst, answer):
        try:
            while True:
                b = src.recv(32 << 10)
                if not b:
                    break
                with self.lock:
                    if answer and self.rewrite:
                        b = self.rewrite(b)
                    self.moved += len(b)
                    cut = self.cut_after and self.moved >= self.cut_after
                    if cut:
                        self.cut_after = 0
                if cut:
                    break
                dst.sendall(b)
        except OSError:
            pass
        for x in (src, dst):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()

    def cut(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def cut_once_after(self, n):
        with self.lock:
            self.moved, self.cut_after = 0, n

    def close(self):
        self.sock.close()
        self.cut()


@pytest.fixture
def proxy_to():
    made = []

    def make(url):
        p = Proxy(url)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


class Middle:
    """A man in the middle at the HTTP level: keeps the last genuine answer
    to a path ending in suffix and, once told (replay = True), serves it
    again in place of asking."""

    def __init__(self, target_url, suffix):
        import http.client
        import http.server

        middle = self
        self.replay, self.last, self.tampered = False, None, 0
        host, port = target_url.split("://", 1)[1].split(":")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                watched = self.path.split("?")[0].endswith(suffix)
                if watched and middle.replay and middle.last:
                    middle.tampered += 1
                    status, headers, body = middle.last
                else:
                    n = int(self.headers.get("Content-Length") or 0)
                    data = self.rfile.read(n) if n else None
                    up = http.client.HTTPConnection(host, int(port), timeout=30)
                    up.request(self.command, self.path, body=data, headers={k: v for k, v in self.headers.items()})
                    r = up.getresponse()
                    status, headers, body = r.status, [(k, v) for k, v in r.getheaders() if k.lower() != "transfer-encoding"], r.read()
                    up.close()
                    if watched:
                        middle.last = (status, headers, body)
                self.send_response_only(status)
                for k, v in headers:
                    if k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
