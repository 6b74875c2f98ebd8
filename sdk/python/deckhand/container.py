"""One container's agent, through its gateway (<gateway>/_/<service>/...)."""

import base64
import hashlib
import http.client
import json
import time
import urllib.parse
from dataclasses import dataclass

from . import _openapi
from ._http import Transport
from ._terminal import Terminal
from .errors import DeckhandError

UPLOAD_CHUNK = 8 << 20
MAX_RECONNECTS = 8


@dataclass
class Output:
    stream: str  # stdout or stderr
    offset: int  # of data's first byte in the process's whole output
    data: bytes


def _backoff(n):
    return min(n * n * 0.1, 5.0)


class Container:
    """Client of the agent gateway at gateway_url; token (agt_... or svc_...)
    goes as Authorization: Bearer."""

    def __init__(self, gateway_url, token=None, timeout=120):
        self._http = Transport(gateway_url, timeout)
        self.base_url = self._http.base
        self.token = token

    def close(self):
        self._http.close()

    def _headers(self, extra=None):
        h = {}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def request(self, method, service, path, query=None, body=None):
        """A JSON call to service: answers the decoded body; 300+ raises DeckhandError."""
        data, hdrs = None, self._headers()
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        status, _, raw = self._http.request(method, "/_/" + service + path, query, data, hdrs)
        if status >= 300:
            raise DeckhandError.from_body(method, path, status, raw)
        return json.loads(raw) if raw else None

    def call(self, service, operation_id, path_params=None, query=None, body=None):
        """Any operation of service's document, by its operationId."""
        method, path = _openapi.resolve(service, operation_id, path_params)
        return self.request(method, service, path, query, body)

    # Processes.

    def run(self, cmd=None, shell=None, **fields):
        """Runs a command to its end: stdout, stderr, exit_code, state ..."""
        body = dict(fields)
        if cmd is not None:
            body["cmd"] = list(cmd)
        if shell is not None:
            body["shell"] = shell
        return self.request("POST", "process", "/api/v1/process/run", body=body)

    def start(self, cmd=None, shell=None, **fields):
        """Starts a command in the background: its record (id, state ...)."""
        body = dict(fields)
        if cmd is not None:
            body["cmd"] = list(cmd)
        if shell is not None:
            body["shell"] = shell
        return self.request("POST", "process", "/api/v1/process", body=body)

    def write_stdin(self, process_id, data):
        return self.request("POST", "process", f"/api/v1/process/{urllib.parse.quote(process_id, safe='')}/stdin",
                            body={"data": base64.b64encode(data).decode(), "encoding": "base64"})

    def stream(self, process_id, since=0, on_output=None, allow_gaps=False):
        """Follows the output until the process ends, calling on_output(Output)
        with each piece in order; answers the final record. A dropped
        connection resumes from the offset after the last piece delivered,
        so each byte is delivered once."""
        off, fails = since, 0
        while True:
            start = off
            place = [off]  # the offset after the last byte delivered
            try:
                end = self._follow(process_id, place, on_output, allow_gaps)
                if end is not None:
                    return end
                err = ConnectionError("the output stream ended early")
            except DeckhandError:
                raise
            except (OSError, http.client.HTTPException, ValueError) as e:
                err = e
            off = place[0]
            if off > start:
                fails = 0
            fails += 1
            if fails > MAX_RECONNECTS:
                raise ConnectionError(f"deckhand: output of {process_id}: {fails - 1} reconnects without progress: {err}")
            time.sleep(_backoff(fails))

    def _follow(self, process_id, place, on_output, allow_gaps):
        off = place[0]
        path = f"/api/v1/process/{urllib.parse.quote(process_id, safe='')}/output"
        # A stream gets its own connection: it is read while other calls go on.
        t = Transport(self.base_url, self._http.timeout)
        try:
            resp = t.open("GET", "/_/process" + path, {"follow": "true", "since": off},
                          headers=self._headers({"Accept": "text/event-stream"}))
            if resp.status != 200:
                raise DeckhandError.from_body("GET", path, resp.status, resp.read())
            event, data = "", ""
            while True:
                line = resp.readline()
                if not line:
                    return None
                line = line.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data:
                        end, off = self._deliver(event or "output", data, off, on_output, allow_gaps)
                        place[0] = off
                        if end is not None:
                            return end
                    event, data = "", ""
                elif line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data += line[5:].lstrip(" ")
        finally:
            t.close()

    @staticmethod
    def _deliver(event, data, off, on_output, allow_gaps):
        msg = json.loads(data)
        if event == "output":
            b = base64.b64decode(msg["data"]) if msg.get("encoding") == "base64" else msg["data"].encode("utf-8")
            o = msg["offset"]
            nxt = o + len(b)
            if nxt <= off:
                return None, off
            if off > o:
                b, o = b[off - o:], off
            if on_output:
                on_output(Output(msg["stream"], o, b))
            return None, nxt
        if event == "gap":
            if not allow_gaps:
                raise DeckhandError(0, "GAP", f"output {msg.get('from')} to {msg.get('to')} was dropped before it was read")
            return None, max(off, msg.get("to", off))
        if event == "end":
            return msg["process"], off
        return None, off

    def screenshot(self):
        """A PNG of the container's display (DeckhandError when it has none)."""
        status, _, raw = self._http.request("GET", "/_/display/api/v1/display/screenshots", headers=self._headers())
        if status != 200:
            raise DeckhandError.from_body("GET", "/api/v1/display/screenshots", status, raw)
        return raw

    # Terminals.

    def terminal(self, id=None, cols=None, rows=None, shell=None, cwd=None):
        """Attaches to terminal session id, or starts a new shell: a Terminal
        with read(), write(), resize(), close() and exit_code."""
        q = {k: v for k, v in (("id", id), ("cols", cols), ("rows", rows), ("shell", shell), ("cwd", cwd)) if v is not None}
        url = self.base_url + "/_/terminal/api/v1/terminal/ws"
        if q:
            url += "?" + urllib.parse.urlencode(q)
        return Terminal(url, self._headers(), self._http.timeout)

    # Files.

    def checksum(self, path):
        return self.request("GET", "files", "/api/v1/files/checksum", {"path": path})

    def upload(self, path, reader, size, overwrite=True, mode=None):
        """Writes size bytes read from reader (a binary file-like object) to
        path with the resumable upload: PATCHes of UPLOAD_CHUNK; a dropped
        connection resumes at the service's offset (the chunk in flight is
        kept to resend); the service's SHA-256 must equal this side's.
        Answers {"path", "size", "sha256", "reconnects"}."""
        req = {"path": path, "size": size, "overwrite": overwrite}
        if mode:
            req["mode"] = mode
        up = self.request("POST", "files", "/api/v1/files/uploads", body=req)
        h = hashlib.sha256()
        buf, buf_start, off, fails, reconnects = b"", 0, up["offset"], 0, 0
        upath = "/api/v1/files/uploads/" + urllib.parse.quote(up["id"], safe="")
        while not up["complete"]:
            if off >= buf_start + len(buf):
                buf_start += len(buf)
                buf = _read_full(reader, min(UPLOAD_CHUNK, size - buf_start))
                h.update(buf)
            if off < buf_start:
                raise DeckhandError(0, "", f"the service holds {off} bytes, behind what this upload can resend")
            try:
                status, _, raw = self._http.request(
                    "PATCH", "/_/files" + upath, body=buf[off - buf_start:],
                    headers=self._headers({"Content-Type": "application/offset+octet-stream", "Upload-Offset": str(off)}))
                if status == 200:
                    up, fails = json.loads(raw), 0
                    off = up["offset"]
                    continue
                err = DeckhandError.from_body("PATCH", upath, status, raw)
                if status != 409 and status < 500:
                    raise err
            except (OSError, http.client.HTTPException) as e:
                err = e
            cur = self.request("GET", "files", upath)
            if cur["offset"] > off:
                fails = 0
            up, off = cur, cur["offset"]
            reconnects += 1
            fails += 1
            if fails > MAX_RECONNECTS:
                raise ConnectionError(f"deckhand: upload {path} stopped at byte {off}: {err}")
            time.sleep(_backoff(fails))
        sha = h.hexdigest()
        s = self.checksum(path)
        if s["sha256"] != sha or s["size"] != size:
            raise DeckhandError(0, "", f"upload {path}: the container holds {s['size']} bytes with SHA-256 {s['sha256']}, sent {sha}")
        return {"path": path, "size": size, "sha256": sha, "reconnects": reconnects}

    def download(self, path, writer):
        """Writes path's content to writer; a dropped connection resumes with
        a ranged GET (If-Range on the ETag), and the service's SHA-256 must
        equal what was written. Answers {"path", "size", "sha256", "reconnects"}."""
        h = hashlib.sha256()
        have, total, etag, fails, reconnects = 0, None, None, 0, 0
        while total is None or have < total:
            start = have
            t = Transport(self.base_url, self._http.timeout)
            try:
                hdrs = self._headers()
                if have:
                    hdrs.update({"Range": f"bytes={have}-", "If-Range": etag})
                resp = t.open("GET", "/_/files/api/v1/files/content", {"path": path}, headers=hdrs)
                if resp.status == 200 and have == 0:
                    etag, total = resp.headers.get("ETag"), int(resp.headers["Content-Length"])
                elif resp.status == 206:
                    if not resp.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
                        raise DeckhandError(206, "", "answered another range than asked")
                elif resp.status == 200:
                    raise DeckhandError(200, "", f"{path} changed during the download")
                else:
                    raise DeckhandError.from_body("GET", "/api/v1/files/content", resp.status, resp.read())
                while True:
                    b = resp.read1(256 << 10) if hasattr(resp, "read1") else resp.read(256 << 10)
                    if not b:
                        break
                    writer.write(b)
                    h.update(b)
                    have += len(b)
                if have >= total:
                    break
            except DeckhandError:
                raise
            except (OSError, http.client.HTTPException):
                pass
            finally:
                t.close()
            if have > start:
                fails = 0
            reconnects += 1
            fails += 1
            if fails > MAX_RECONNECTS:
                raise ConnectionError(f"deckhand: download {path} stopped at byte {have}")
            time.sleep(_backoff(fails))
        sha = h.hexdigest()
        s = self.checksum(path)
        if s["sha256"] != sha or s["etag"] != etag:
            raise DeckhandError(0, "", f"{path} changed while it was read")
        return {"path": path, "size": have, "sha256": sha, "reconnects": reconnects}


def _read_full(reader, n):
    parts, got = [], 0
    while got < n:
        b = reader.read(n - got)
        if not b:
            raise EOFError(f"deckhand: the reader ended {n - got} bytes early")
        parts.append(b)
        got += len(b)
    return b"".join(parts)
