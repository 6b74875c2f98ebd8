/**
 * What keeps a container's state: pause and resume, snapshots and forks,
 * workspaces that outlive a container, and keep-alive leases against its
 * idle timeout. The same verbs are in the Go and Python SDKs; they are
 * methods of client.containers and of a container's handle.
 */
import { Container, type ContainerInfo } from "./container.js";
import { Containers, infoOf } from "./containers.js";

/** A snapshot of a container's filesystem and workspace. */
export interface Snapshot {
  id: string;
  name: string;
  containerId: string;
  projectId: string;
  sizeBytes: number;
  /** The engine's reference of the snapshot's image. */
  imageName: string;
  createdAt: string;
}

/** A workspace kept after its container was deleted; containerId: the one that mounts it now ("" when none). */
export interface Workspace {
  id: string;
  projectId: string;
  name: string;
  containerId: string;
  createdAt: string;
}

/** A keep-alive lease: until expiresAt the container does not count as idle. */
export interface Lease {
  id: string;
  durationSeconds: number;
  createdAt: string;
  expiresAt: string;
}

/** What containers.fork takes besides the snapshot. */
export interface ForkOptions {
  /** Names the copies <name>-1 ... <name>-<count>; required. */
  name: string;
  /** 1-10, default 1. */
  count?: number;
  /** The snapshot's project; absent: the caller's only project. */
  project?: string;
}

declare module "./containers.js" {
  interface Containers {
    /** Freezes a running container (memory, connections and output offsets stay). */
    pause(id: string): Promise<ContainerInfo>;
    /** Thaws a paused container; answers once its agent answers again. */
    resume(id: string): Promise<ContainerInfo>;
    snapshot(id: string, name: string): Promise<Snapshot>;
    snapshots(id: string): Promise<Snapshot[]>;
    renameSnapshot(id: string, sid: string, name: string): Promise<Snapshot>;
    deleteSnapshot(id: string, sid: string): Promise<void>;
    /** Puts the container back to snapshot sid; answers in creating. */
    restore(id: string, sid: string): Promise<ContainerInfo>;
    /** Makes count containers from a snapshot; answers their handles in creating. */
    fork(snapshotId: string, o: ForkOptions): Promise<Container[]>;
    /** The project's kept workspaces (absent: the caller's only project). */
    workspaces(project?: string): Promise<Workspace[]>;
    deleteWorkspace(project: string, id: string): Promise<void>;
    /** Deletes a container but keeps its workspace (listed under its id). */
    deleteKeepingWorkspace(id: string): Promise<void>;
  }
}

declare module "./container.js" {
  interface Container {
    /** Takes a keep-alive lease of seconds (1-86400): until it ends the container does not count as idle. */
    keepalive(seconds: number): Promise<Lease>;
  }
}

const q = encodeURIComponent;
const snapshotOf = (w: Record<string, any>): Snapshot => ({
  id: w.id, name: w.name, containerId: w.container_id, projectId: w.project_id, sizeBytes: w.size_bytes ?? 0,
  imageName: w.image_name ?? "", createdAt: w.created_at,
});
const workspaceOf = (w: Record<string, any>): Workspace => ({
  id: w.id, projectId: w.project_id, name: w.name ?? "", containerId: w.container_id ?? "", createdAt: w.created_at,
});

// The class's own helpers (its client, its only project) are private to
// its file; these methods are its own all the same.
type Inner = { c: { request<T = any>(method: string, path: string, query?: Record<string, string | number>, body?: unknown): Promise<T> }; onlyProject(): Promise<string> };
const inner = (cs: Containers) => cs as unknown as Inner;

Object.assign(Containers.prototype, {
  async pause(this: Containers, id: string) {
    return infoOf(await inner(this).c.request("POST", `/api/v1/containers/${q(id)}/pause`));
  },
  async resume(this: Containers, id: string) {
    return infoOf(await inner(this).c.request("POST", `/api/v1/containers/${q(id)}/resume`));
  },
  async snapshot(this: Containers, id: string, name: string) {
    return snapshotOf(await inner(this).c.request("POST", `/api/v1/containers/${q(id)}/snapshots`, undefined, { name }));
  },
  async snapshots(this: Containers, id: string) {
    const d = await inner(this).c.request<{ snapshots?: Record<string, any>[] }>("GET", `/api/v1/containers/${q(id)}/snapshots`);
    return (d.snapshots ?? []).map(snapshotOf);
  },
  async renameSnapshot(this: Containers, id: string, sid: string, name: string) {
    return snapshotOf(await inner(this).c.request("PATCH", `/api/v1/containers/${q(id)}/snapshots/${q(sid)}`, undefined, { name }));
  },
  async deleteSnapshot(this: Containers, id: string, sid: string) {
    await inner(this).c.request("DELETE", `/api/v1/containers/${q(id)}/snapshots/${q(sid)}`);
  },
  async restore(this: Containers, id: string, sid: string) {
    return infoOf(await inner(this).c.request("POST", `/api/v1/containers/${q(id)}/snapshots/${q(sid)}/restore`));
  },
  async fork(this: Containers, snapshotId: string, o: ForkOptions) {
    if (!snapshotId || !o?.name) throw new Error("deckhand: containers.fork: snapshotId and name: required");
    const body = { project_id: o.project ?? (await inner(this).onlyProject()), name: o.name, snapshot_id: snapshotId, count: o.count ?? 1 };
    const ws = await inner(this).c.request<Record<string, any>[]>("POST", "/api/v1/containers", undefined, body);
    return ws.map((w) => this.handle(infoOf(w)));
  },
  async workspaces(this: Containers, project?: string) {
    const p = project ?? (await inner(this).onlyProject());
    const d = await inner(this).c.request<{ workspaces?: Record<string, any>[] }>("GET", `/api/v1/projects/${q(p)}/workspaces`);
    return (d.workspaces ?? []).map(workspaceOf);
  },
  async deleteWorkspace(this: Containers, project: string, id: string) {
    await inner(this).c.request("DELETE", `/api/v1/projects/${q(project)}/workspaces/${q(id)}`);
  },
  async deleteKeepingWorkspace(this: Containers, id: string) {
    await inner(this).c.request("DELETE", `/api/v1/containers/${q(id)}`, { keep_workspace: "true" });
  },
});

Object.assign(Container.prototype, {
  async keepalive(this: Container, seconds: number): Promise<Lease> {
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86400) throw new Error("deckhand: keepalive: seconds: a whole number 1-86400");
    // The gateway takes the leases route on any service's host; the
    // process service's is the one whose permission it needs.
    const w = await this.request<Record<string, any>>("POST", "process", "/api/v1/agent/leases", undefined, { duration_seconds: seconds });
    return { id: w.id, durationSeconds: w.duration_seconds, createdAt: w.created_at, expiresAt: w.expires_at };
  },
});
