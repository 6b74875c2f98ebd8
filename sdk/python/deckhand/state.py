"""What keeps a container's state: pause and resume, snapshots and forks,
workspaces that outlive a container, and keep-alive leases against its
idle timeout. The same verbs are in the Go and TypeScript SDKs."""

import urllib.parse
from dataclasses import dataclass


def _q(s):
    return urllib.parse.quote(s, safe="")


@dataclass
class Snapshot:
    """A snapshot of a container's filesystem and workspace."""
    id: str
    name: str
    container_id: str
    project_id: str
    size_bytes: int = 0
    image_name: str = ""
    created_at: str = ""

    @classmethod
    def of(cls, w):
        return cls(id=w["id"], name=w.get("name", ""), container_id=w.get("container_id", ""),
                   project_id=w.get("project_id", ""), size_bytes=w.get("size_bytes") or 0,
                   image_name=w.get("image_name") or "", created_at=w.get("created_at") or "")


@dataclass
class Workspace:
    """A workspace kept after its container was deleted; container_id is
    the container that mounts it now ("" when none)."""
    id: str
    project_id: str
    name: str = ""
    container_id: str = ""
    created_at: str = ""

    @classmethod
    def of(cls, w):
        return cls(id=w["id"], project_id=w.get("project_id", ""), name=w.get("name") or "",
                   container_id=w.get("container_id") or "", created_at=w.get("created_at") or "")


@dataclass
class Lease:
    """A keep-alive lease: until expires_at the container is not idle."""
    id: str
    duration_seconds: int
    created_at: str = ""
    expires_at: str = ""


class StateVerbs:
    """The state verbs of Client.containers (Containers)."""

    def pause(self, id):
        """Freezes a running container (memory, connections and output offsets stay)."""
        return self._act(id, "pause")

    def resume(self, id):
        """Thaws a paused container; answers once its agent answers again."""
        return self._act(id, "resume")

    def snapshot(self, id, name):
        """Takes a snapshot named name of container id."""
        return Snapshot.of(self._c.request("POST", f"/api/v1/containers/{_q(id)}/snapshots", body={"name": name}))

    def snapshots(self, id):
        """Container id's snapshots, oldest first."""
        d = self._c.request("GET", f"/api/v1/containers/{_q(id)}/snapshots")
        return [Snapshot.of(w) for w in d.get("snapshots") or []]

    def rename_snapshot(self, id, sid, name):
        return Snapshot.of(self._c.request("PATCH", f"/api/v1/containers/{_q(id)}/snapshots/{_q(sid)}", body={"name": name}))

    def delete_snapshot(self, id, sid):
        self._c.request("DELETE", f"/api/v1/containers/{_q(id)}/snapshots/{_q(sid)}")

    def restore(self, id, sid):
        """Puts container id back to snapshot sid; answers in creating."""
        from .containers import ContainerInfo
        return ContainerInfo.of(self._c.request("POST", f"/api/v1/containers/{_q(id)}/snapshots/{_q(sid)}/restore"))

    def fork(self, snapshot_id, name, count=1, project=None):
        """Makes count containers (1-10, named name-1 ...) from a snapshot and
        answers their handles in creating."""
        if not snapshot_id or not name:
            raise ValueError("deckhand: containers.fork: snapshot_id and name: required")
        from .containers import ContainerInfo
        body = {"project_id": project or self._only_project(), "name": name, "snapshot_id": snapshot_id, "count": count}
        return [self._handle(ContainerInfo.of(w)) for w in self._c.request("POST", "/api/v1/containers", body=body)]

    def workspaces(self, project=None):
        """The project's kept workspaces (None: the caller's only project)."""
        d = self._c.request("GET", f"/api/v1/projects/{_q(project or self._only_project())}/workspaces")
        return [Workspace.of(w) for w in d.get("workspaces") or []]

    def delete_workspace(self, project, id):
        self._c.request("DELETE", f"/api/v1/projects/{_q(project)}/workspaces/{_q(id)}")

    def delete_keeping_workspace(self, id):
        """Deletes container id but keeps its workspace (listed under its id)."""
        self._c.request("DELETE", "/api/v1/containers/" + _q(id), query={"keep_workspace": "true"})


class ContainerState:
    """The state verbs of a container's handle (Container)."""

    def keepalive(self, seconds):
        """Takes a keep-alive lease of seconds (1-86400) on the container's
        agent: until it ends the container does not count as idle, so its
        idle timeout neither stops nor pauses it."""
        return _keepalive(self, seconds)


def _keepalive(box, seconds):
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 1 <= seconds <= 86400:
        raise ValueError("deckhand: keepalive: seconds: a whole number 1-86400")
    # The gateway takes the leases route on any service's host; the
    # process service's is the one whose permission it needs.
    w = box.request("POST", "process", "/api/v1/agent/leases", body={"duration_seconds": seconds})
    return Lease(id=w["id"], duration_seconds=w["duration_seconds"], created_at=w.get("created_at", ""),
                 expires_at=w.get("expires_at", ""))
