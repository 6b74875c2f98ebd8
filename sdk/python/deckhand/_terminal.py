"""The terminal service's WebSocket as a file-like object, on the standard
library (RFC 6455 client frames: masked; server frames: unmasked)."""

import base64
import json
import os
import socket
import ssl
import struct
import threading
import urllib.parse

from .errors import DeckhandError

_BIN, _TEXT, _CLOSE, _PING, _PONG = 0x2, 0x1, 0x8, 0x9, 0xA


class Terminal:
    """One attached terminal session. read() answers the PTY's output (the
    scrollback first) and b"" once the shell has ended (exit_code then says
    how) or the connection closed; write() types into it."""

    def __init__(self, url, headers, timeout=60, connect_to=None):
        u = urllib.parse.urlsplit(url)
        port = u.port or (443 if u.scheme == "https" else 80)
        addr = (u.hostname, port)
        if connect_to:
            host, _, p = connect_to.rpartition(":")
            addr = (host, int(p))
        sock = socket.create_connection(addr, timeout=timeout)
        if u.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=u.hostname)
        self._sock = sock
        self._wlock = threading.Lock()
        self._buf = b""
        self._eof = False
        self.exit_code = None
        key = base64.b64encode(os.urandom(16)).decode()
        target = u.path + ("?" + u.query if u.query else "")
        req = [f"GET {target} HTTP/1.1", f"Host: {u.netloc}", "Upgrade: websocket", "Connection: Upgrade",
               f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        req += [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(req) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            b = sock.recv(4096)
            if not b:
                raise ConnectionError("deckhand: the terminal closed during the handshake")
            head += b
        head, self._pending = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin1").split("\r\n")
        status = int(lines[0].split()[1])
        if status != 101:
            hdrs = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
            body = self._pending
            n = int(hdrs.get("Content-Length", len(body)))
            while len(body) < n:
                b = sock.recv(n - len(body))
                if not b:
                    break
                body += b
            sock.close()
            raise DeckhandError.from_body("GET", "/api/v1/terminal/ws", status, body)
        sock.settimeout(None)

    def _recv(self, n):
        while len(self._pending) < n:
            b = self._sock.recv(65536)
            if not b:
                raise EOFError
            self._pending += b
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def _frame(self):
        b0, b1 = self._recv(2)
        op, n = b0 & 0x0F, b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._recv(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._recv(8))[0]
        mask = self._recv(4) if b1 & 0x80 else None
        data = self._recv(n)
        if mask:
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return op, data

    def _send(self, op, data):
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x80 | op])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        with self._wlock:
            self._sock.sendall(head + mask + masked)

    def read(self, n=65536):
        while not self._buf and not self._eof:
            try:
                op, data = self._frame()
            except (EOFError, OSError):
                self._eof = True
                break
            if op == _BIN:
                self._buf = data
            elif op == _TEXT:
                msg = json.loads(data)
                if msg.get("type") == "exit":
                    self.exit_code = msg.get("code")
                    self._eof = True
            elif op == _PING:
                self._send(_PONG, data)
            elif op == _CLOSE:
                self._eof = True
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def write(self, data):
        self._send(_BIN, bytes(data))
        return len(data)

    def resize(self, cols, rows):
        self._send(_TEXT, json.dumps({"type": "resize", "cols": cols, "rows": rows}).encode())

    def close(self):
        """Detaches (the session goes on until its shell ends or is deleted)."""
        try:
            self._send(_CLOSE, struct.pack(">H", 1000))
        except OSError:
            pass
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
