"""The control plane's container API: Client.containers."""

import os
import time
import urllib.parse
from dataclasses import dataclass, field

from .container import Container
from .state import StateVerbs


@dataclass
class ContainerInfo:
    """The control plane's record of a container."""
    id: str
    project_id: str
    name: str
    status: str  # creating, running, paused, stopped, failed or deleting
    status_reason: str = ""
    image_id: str = ""
    image_name: str = ""
    autostart: bool = False
    cpus: float = 0
    memory_mb: int = 0
    env: dict = field(default_factory=dict)
    runtime: str = ""
    # Each agent service (process, files, terminal ...) -> its URL through the platform proxy.
    urls: dict = field(default_factory=dict)
    # Where the control plane reaches the agent's gateway (host:port) while it runs.
    agent_addr: str = ""
    created_at: str = ""
    updated_at: str = ""

    @classmethod
    def of(cls, w):
        r = w.get("resources") or {}
        return cls(id=w["id"], project_id=w.get("project_id", ""), name=w.get("name", ""), status=w.get("status", ""),
                   status_reason=w.get("status_reason") or "", image_id=w.get("image_id") or "",
                   image_name=w.get("image_name") or "", autostart=bool(w.get("autostart")), cpus=r.get("cpus") or 0,
                   memory_mb=r.get("memory_mb") or 0, env=w.get("env") or {}, runtime=w.get("runtime") or "",
                   urls=w.get("urls") or {}, agent_addr=w.get("agent_addr") or "", created_at=w.get("created_at") or "",
                   updated_at=w.get("updated_at") or "")


class StateError(Exception):
    """A container that settled in another status than the one waited for."""

    def __init__(self, id, status, reason, want):
        super().__init__(f"deckhand: container {id} is {status}, not {want}" + (f": {reason}" if reason else ""))
        self.id, self.status, self.reason, self.want = id, status, reason, want


def _q(s):
    return urllib.parse.quote(s, safe="")


class Containers(StateVerbs):
    def __init__(self, client, agent_token=None, route="proxy", proxy_addr=None):
        self._c = client
        self._agent_token = agent_token
        self._route = route
        self._proxy_addr = proxy_addr

    def _handle(self, info):
        return Container(token=self._agent_token, info=info, route=self._route,
                         proxy_addr=self._proxy_addr, lifecycle=self)

    def create(self, image, project=None, name=None, autostart=False, cpus=None, memory_mb=None, env=None):
        """Creates a container running image (a catalog id img_... or its
        alias) and answers its handle at once, in creating: call
        wait_running() before using its agent. As a context manager the
        handle deletes the container on exit."""
        if not image or not str(image).strip():
            raise ValueError("deckhand: containers.create: image: required (a catalog image id or alias)")
        if (cpus is None) != (memory_mb is None):
            raise ValueError("deckhand: containers.create: cpus and memory_mb: give both or neither")
        body = {"project_id": project or self._only_project(), "name": name or "sandbox-" + os.urandom(4).hex(),
                "image_id": self._image_id(image), "autostart": autostart}
        if cpus is not None:
            body["resources"] = {"cpus": cpus, "memory_mb": memory_mb}
        if env:
            body["env"] = dict(env)
        return self._handle(ContainerInfo.of(self._c.request("POST", "/api/v1/containers", body=body)))

    def _only_project(self):
        ids = []
        for p in self._c.pages("/api/v1/projects", "projects"):
            ids.append(p["id"])
            if len(ids) > 1:
                break
        if len(ids) == 1:
            return ids[0]
        raise ValueError("deckhand: project: required: the caller has " +
                         ("several projects, name one" if ids else "no project (create one first)"))

    def _image_id(self, image):
        if image.startswith("img_"):
            return image
        for im in self._c.pages("/api/v1/images/public", "images"):
            if im.get("alias") == image:
                return im["id"]
        raise ValueError(f"deckhand: image {image!r}: no catalog image has this alias")

    def mint(self, id, ttl_seconds):
        """An access token for container id's agent: {token, expires_at, ...}."""
        return self._c.request("POST", f"/api/v1/containers/{_q(id)}/access-tokens", body={"ttl_seconds": ttl_seconds})

    def get(self, id):
        """Container id's handle with its record as it is now."""
        return self._handle(ContainerInfo.of(self._c.request("GET", "/api/v1/containers/" + _q(id))))

    def list(self, project=None):
        """Every container of a project (None: the caller's only project), oldest first."""
        return [ContainerInfo.of(w) for w in
                self._c.pages("/api/v1/containers", "containers", query={"project_id": project or self._only_project()})]

    def _act(self, id, verb):
        return ContainerInfo.of(self._c.request("POST", f"/api/v1/containers/{_q(id)}/{verb}"))

    def start(self, id):
        """Starts a stopped or failed container; answers once its agent answers or it failed."""
        return self._act(id, "start")

    def stop(self, id):
        """Stops a container (10 s grace); the workspace stays."""
        return self._act(id, "stop")

    def restart(self, id):
        return self._act(id, "restart")

    def delete(self, id):
        """Deletes a container, its engine objects and its workspace."""
        self._c.request("DELETE", "/api/v1/containers/" + _q(id))

    def wait_running(self, id, timeout=300):
        """Polls until the container runs and answers its record; one that
        settles failed, stopped or deleting raises StateError."""
        deadline = time.monotonic() + timeout
        n = 0
        while True:
            n += 1
            i = ContainerInfo.of(self._c.request("GET", "/api/v1/containers/" + _q(id)))
            if i.status == "running":
                return i
            if i.status in ("failed", "stopped", "deleting"):
                raise StateError(id, i.status, i.status_reason, "running")
            if time.monotonic() > deadline:
                raise StateError(id, i.status, f"still {i.status} after {timeout} s", "running")
            time.sleep(min(n * 0.1, 1.0))
