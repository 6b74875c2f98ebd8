"""One container: its agent's services (processes, files, terminals) and,
for a handle from Client.containers, its record and lifecycle. The agent
is reached through the platform proxy's per-service URLs, at the agent
address the record carries, or at a gateway URL (<gateway>/_/<service>/...)."""

import base64
import hashlib
import http.client
import io
import json
import os
import time
import urllib.parse
from dataclasses import dataclass

from . import _openapi
from .state import ContainerState
from ._http import Transport
from ._terminal import Terminal
from .errors import DeckhandError

UPLOAD_CHUNK = 8 << 20
MAX_RECONNECTS = 8
ACCESS_TOKEN_TTL = 3600  # seconds the access tokens a handle mints last
ACCESS_TOKEN_RENEW = 300  # a handle mints a new one when less than this is left


@dataclass
class Output:
    stream: str  # stdout or stderr
    offset: int  # of data's first byte in the process's whole output
    data: bytes


def _backoff(n):
    return min(n * n * 0.1, 5.0)


class Container(ContainerState):
    """A container's agent. Container(gateway_url, token) reaches it at a
    gateway URL; Client.containers answers handles reaching it through the
    control plane (route "proxy": the per-service URLs, optionally all
    connected to proxy_addr; route "agent_addr": the record's agent
    address). token goes as Authorization: Bearer.

    process and files are the verbs most programs need; used as a context
    manager, a handle from Client.containers deletes its container on exit.
    """

    def __init__(self, gateway_url=None, token=None, timeout=120, info=None, route="proxy", proxy_addr=None, lifecycle=None):
        if route not in ("proxy", "agent_addr"):
            raise ValueError(f"deckhand: route {route!r}: must be 'proxy' or 'agent_addr'")
        self.base_url = Transport(gateway_url).base if gateway_url else None
        self.token = token
        self._explicit = bool(token)
        self._token_exp = 0.0
        self.info = info
        self._timeout = timeout
        self._route = route
        self._proxy_addr = proxy_addr
        self._lifecycle = lifecycle
        self._svcs = {}
        self.process = Processes(self)
        self.files = Files(self)

    @property
    def id(self):
        return self.info.id if self.info else None

    def with_token(self, token):
        """The same container, sending another token to its agent."""
        return Container(self.base_url, token, self._timeout, self.info, self._route, self._proxy_addr, self._lifecycle)

    def url(self, service):
        """The URL of one of the container's services (process, files,
        terminal ...), or of a port preview as "p<port>", through the
        platform proxy; for a gateway handle, through its gateway."""
        if self.base_url:
            return f"{self.base_url}/_/{service}"
        urls = (self.info.urls if self.info else None) or {}
        if service in urls:
            return urls[service]
        for svc, u in urls.items():
            marker = f"-{svc}-1."
            i = u.find(marker)
            if i >= 0:
                return u[:i] + f"-{service}-1." + u[i + len(marker):]
        return ""

    def _service_url(self, service):
        if not self.base_url and self._route == "agent_addr" and self.info and self.info.agent_addr:
            return f"http://{self.info.agent_addr}/_/{service}"
        u = self.url(service)
        if not u:
            raise DeckhandError(0, "", f"container {self.id}: no address for its {service} service yet (wait_running first)")
        return u

    def _connect_to(self):
        return self._proxy_addr if not self.base_url and self._route == "proxy" else None

    def _svc(self, service):
        """The kept-alive transport of one service."""
        base = self._service_url(service)
        t = self._svcs.get(base)
        if t is None:
            t = self._svcs[base] = Transport(base, self._timeout, self._connect_to())
        return t

    def _fresh(self, service):
        """A transport of its own (a stream is read while other calls go on)."""
        return Transport(self._service_url(service), self._timeout, self._connect_to())

    def close(self):
        for t in self._svcs.values():
            t.close()
        self._svcs = {}

    # The record and lifecycle (handles from Client.containers).

    def _need_record(self):
        if self._lifecycle is None:
            raise DeckhandError(0, "", "this handle has no control-plane record (use Client.containers)")
        return self._lifecycle

    def grant(self):
        """Mints an access token for the container's agent (POST
        /api/v1/containers/{id}/access-tokens: signed by the control plane,
        every service, ACCESS_TOKEN_TTL seconds) and uses it from now on. A
        handle from Client.containers without an explicit token does this by
        itself on its first call to the agent and again before it expires."""
        at = self._need_record().mint(self.id, ACCESS_TOKEN_TTL)
        self.token, self._explicit = at["token"], False
        self._token_exp = time.time() + ACCESS_TOKEN_TTL

    def _bearer(self):
        if self._explicit or self._lifecycle is None or (self.token and self._token_exp - time.time() > ACCESS_TOKEN_RENEW):
            return self.token
        self.grant()
        return self.token

    def wait_running(self, timeout=300):
        """Waits until the container runs and keeps its record (agent address, URLs)."""
        self.info = self._need_record().wait_running(self.id, timeout)
        return self.info

    def refresh(self):
        self.info = self._need_record().get(self.id).info
        return self.info

    def delete(self):
        self._need_record().delete(self.id)
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._lifecycle is not None and self.id:
            self.delete()
        else:
            self.close()

    def _headers(self, extra=None):
        h = {}
        token = self._bearer()
        if token:
            h["Authorization"] = "Bearer " + token
        h.update(extra or {})
        return h

    def request(self, method, service, path, query=None, body=None):
        """A JSON call to service: answers the decoded body; 300+ raises DeckhandError."""
        data, hdrs = None, self._headers()
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        status, _, raw = self._svc(service).request(method, path, query, data, hdrs)
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
        t = self._fresh("process")
        try:
            resp = t.open("GET", path, {"follow": "true", "since": off},
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
        status, _, raw = self._svc("display").request("GET", "/api/v1/display/screenshots", headers=self._headers())
        if status != 200:
            raise DeckhandError.from_body("GET", "/api/v1/display/screenshots", status, raw)
        return raw

    # Terminals.

    def terminal(self, id=None, cols=None, rows=None, shell=None, cwd=None):
        """Attaches to terminal session id, or starts a new shell: a Terminal
        with read(), write(), resize(), close() and exit_code."""
        q = {k: v for k, v in (("id", id), ("cols", cols), ("rows", rows), ("shell", shell), ("cwd", cwd)) if v is not None}
        url = self._service_url("terminal") + "/api/v1/terminal/ws"
        if q:
            url += "?" + urllib.parse.urlencode(q)
        return Terminal(url, self._headers(), self._timeout, self._connect_to())

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
                status, _, raw = self._svc("files").request(
                    "PATCH", upath, body=buf[off - buf_start:],
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
            t = self._fresh("files")
            try:
                hdrs = self._headers()
                if have:
                    hdrs.update({"Range": f"bytes={have}-", "If-Range": etag})
                resp = t.open("GET", "/api/v1/files/content", {"path": path}, headers=hdrs)
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


@dataclass
class Result:
    """How a program ended; a non-zero exit is no error. state is exited,
    killed, timed_out or failed_to_start (then error says why); exit_code
    is -1 when it has none."""
    id: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int = -1
    state: str = ""
    signal: str = ""
    error: str = ""
    truncated: bool = False


def _result(r, with_output=True):
    out, err = (r.get("stdout", ""), r.get("stderr", "")) if with_output else ("", "")
    if with_output and r.get("encoding") == "base64":
        out = base64.b64decode(out).decode("utf-8", "replace")
        err = base64.b64decode(err).decode("utf-8", "replace")
    code = r.get("exit_code")
    return Result(id=r.get("id", ""), stdout=out, stderr=err, exit_code=-1 if code is None else code,
                  state=r.get("state", ""), signal=r.get("signal") or "", error=r.get("error") or "",
                  truncated=bool(r.get("truncated")))


def _command(cmd, env=None, cwd=None, stdin=None, timeout=None):
    if isinstance(cmd, str):
        body = {"shell": cmd}
    elif cmd:
        body = {"cmd": list(cmd)}
    else:
        raise ValueError("deckhand: cmd: give an argv (a list) or a shell line (a str)")
    if env:
        body["env"] = dict(env)
    if cwd:
        body["cwd"] = cwd
    if timeout:
        body["timeout_ms"] = int(timeout * 1000)
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
        body["stdin"], body["stdin_encoding"] = base64.b64encode(data).decode(), "base64"
    return body


class Running:
    """A program started in the background."""

    def __init__(self, box, id, pid):
        self._box, self.id, self.pid = box, id, pid

    def stream(self, on_output):
        """Calls on_output(Output) with each piece of output, in order, until
        it ends (resuming after dropped connections); answers how it ended."""
        return _result(self._box.stream(self.id, on_output=on_output), with_output=False)

    def wait(self):
        """Collects stdout and stderr until it ends."""
        parts = {"stdout": [], "stderr": []}
        r = self.stream(lambda o: parts[o.stream].append(o.data))
        r.stdout = b"".join(parts["stdout"]).decode("utf-8", "replace")
        r.stderr = b"".join(parts["stderr"]).decode("utf-8", "replace")
        return r

    def kill(self):
        self._box.request("DELETE", "process", "/api/v1/process/" + urllib.parse.quote(self.id, safe=""))


class Processes:
    """Runs programs in a container: container.process."""

    def __init__(self, box):
        self._box = box

    def run(self, cmd, env=None, cwd=None, stdin=None, timeout=None):
        """Runs cmd (an argv list, or a shell line str) to its end: a Result."""
        return _result(self._box.request("POST", "process", "/api/v1/process/run", body=_command(cmd, env, cwd, stdin, timeout)))

    def start(self, cmd, env=None, cwd=None, stdin=None, timeout=None):
        """Starts cmd in the background; its output is kept from the first
        byte for stream() or wait(). Answers a Running."""
        body = _command(cmd, env, cwd, stdin, timeout)
        body["hold_output"] = True
        p = self._box.request("POST", "process", "/api/v1/process", body=body)
        return Running(self._box, p["id"], p.get("pid", 0))


@dataclass
class FileInfo:
    name: str
    path: str
    type: str  # file, dir, symlink or other
    size: int
    mode: str
    modified: str
    owner: str


class Files:
    """Reads and writes files in a container: container.files."""

    def __init__(self, box):
        self._box = box

    def read(self, path):
        """The file's bytes (resumable, checksummed)."""
        buf = io.BytesIO()
        self._box.download(path, buf)
        return buf.getvalue()

    def read_text(self, path, encoding="utf-8"):
        return self.read(path).decode(encoding)

    def write(self, path, data):
        """Puts data (bytes or str) at path, replacing a file there; it
        appears whole or not at all."""
        body = data.encode() if isinstance(data, str) else bytes(data)
        status, _, raw = self._box._svc("files").request(
            "PUT", "/api/v1/files/content", {"path": path, "overwrite": "true"}, body,
            self._box._headers({"Content-Type": "application/octet-stream"}))
        if status >= 300:
            raise DeckhandError.from_body("PUT", "/api/v1/files/content", status, raw)

    def list(self, path):
        """The entries of the directory at path, as FileInfo."""
        l = self._box.request("GET", "files", "/api/v1/files", {"path": path})
        return [FileInfo(e["name"], e["path"], e["type"], e["size"], e["mode"], e["modified"], e["owner"]) for e in l["entries"]]

    def upload(self, local, path):
        """Copies a local file into the container (resumable, checksummed)."""
        with open(local, "rb") as f:
            return self._box.upload(path, f, os.fstat(f.fileno()).st_size)

    def download(self, path, local):
        """Copies a file out of the container; the local file is written
        beside and renamed into place once whole."""
        tmp = local + ".deckhand-part"
        try:
            with open(tmp, "wb") as f:
                t = self._box.download(path, f)
            os.replace(tmp, local)
            return t
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
