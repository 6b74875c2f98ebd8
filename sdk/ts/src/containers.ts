import type { DeckhandClient } from "./client.js";
import { Container, type ContainerInfo, type Route } from "./container.js";

/** What containers.create takes besides the image. */
export interface CreateOptions {
  /** The project's id; absent: the caller's only project. */
  project?: string;
  /** Unique in the project; absent: sandbox-<random>. */
  name?: string;
  autostart?: boolean;
  /** Limits: give both or neither. */
  cpus?: number;
  memoryMb?: number;
  env?: Record<string, string>;
}

/** A container that settled in another status than the one waited for. */
export class StateError extends Error {
  constructor(readonly id: string, readonly status: string, readonly reason: string, readonly want: string) {
    super(`deckhand: container ${id} is ${status}, not ${want}${reason ? `: ${reason}` : ""}`);
    this.name = "StateError";
  }
}

export function infoOf(w: Record<string, any>): ContainerInfo {
  return {
    id: w.id, projectId: w.project_id, name: w.name, imageId: w.image_id ?? "", imageName: w.image_name ?? "",
    status: w.status, statusReason: w.status_reason ?? "", autostart: !!w.autostart,
    cpus: w.resources?.cpus ?? 0, memoryMb: w.resources?.memory_mb ?? 0, env: w.env ?? {}, runtime: w.runtime ?? "",
    urls: w.urls ?? {}, agentAddr: w.agent_addr ?? "", createdAt: w.created_at, updatedAt: w.updated_at,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The control plane's container API: client.containers. */
export class Containers {
  constructor(private readonly c: DeckhandClient, private readonly agent: { token?: string; route?: Route; fetch?: typeof fetch }) {}

  /** A handle of a container whose record is info. */
  handle(info: ContainerInfo): Container {
    const box = new Container("", { token: this.agent.token, route: this.agent.route, fetch: this.agent.fetch });
    box.info = info;
    box.lifecycle = {
      get: (id) => this.get(id).then((b) => b.info!),
      waitRunning: (id) => this.waitRunning(id),
      delete: (id) => this.delete(id),
      mint: (id, ttlSeconds) => this.c.request("POST", `/api/v1/containers/${encodeURIComponent(id)}/access-tokens`, undefined, { ttl_seconds: ttlSeconds }),
    };
    return box;
  }

  /**
   * Creates a container running image (a catalog id img_... or its alias);
   * answers its handle at once, in creating: waitRunning before using it.
   */
  async create(image: string, o: CreateOptions = {}): Promise<Container> {
    if (!image?.trim()) throw new Error("deckhand: containers.create: image: required (a catalog image id or alias)");
    if ((o.cpus === undefined) !== (o.memoryMb === undefined)) throw new Error("deckhand: containers.create: cpus and memoryMb: give both or neither");
    const project = o.project ?? (await this.onlyProject());
    const imageId = await this.imageId(image);
    const name = o.name ?? `sandbox-${Array.from(crypto.getRandomValues(new Uint8Array(4)), (x) => x.toString(16).padStart(2, "0")).join("")}`;
    const body: Record<string, unknown> = { project_id: project, name, image_id: imageId, autostart: !!o.autostart };
    if (o.cpus !== undefined) body.resources = { cpus: o.cpus, memory_mb: o.memoryMb };
    if (o.env) body.env = o.env;
    return this.handle(infoOf(await this.c.request("POST", "/api/v1/containers", undefined, body)));
  }

  private async onlyProject(): Promise<string> {
    const ids: string[] = [];
    for await (const p of this.c.pages<{ id: string }>("/api/v1/projects", "projects")) {
      ids.push(p.id);
      if (ids.length > 1) break;
    }
    if (ids.length === 1) return ids[0];
    throw new Error(`deckhand: create options: project: required: the caller has ${ids.length ? "several projects, name one" : "no project (create one first)"}`);
  }

  private async imageId(image: string): Promise<string> {
    if (image.startsWith("img_")) return image;
    for await (const im of this.c.pages<{ id: string; alias: string }>("/api/v1/images/public", "images")) if (im.alias === image) return im.id;
    throw new Error(`deckhand: image ${JSON.stringify(image)}: no catalog image has this alias`);
  }

  /** Container id's handle with its record as it is now. */
  async get(id: string): Promise<Container> {
    return this.handle(infoOf(await this.c.request("GET", `/api/v1/containers/${encodeURIComponent(id)}`)));
  }

  /** Every container of a project (absent: the caller's only project), oldest first. */
  async list(project?: string): Promise<ContainerInfo[]> {
    const out: ContainerInfo[] = [];
    for await (const w of this.c.pages<Record<string, any>>("/api/v1/containers", "containers", 0, { project_id: project ?? (await this.onlyProject()) })) out.push(infoOf(w));
    return out;
  }

  private async act(id: string, verb: string): Promise<ContainerInfo> {
    return infoOf(await this.c.request("POST", `/api/v1/containers/${encodeURIComponent(id)}/${verb}`));
  }

  /** Starts a stopped or failed container; answers once its agent answers or it failed. */
  start(id: string): Promise<ContainerInfo> {
    return this.act(id, "start");
  }

  /** Stops a container (10 s grace); the workspace stays. */
  stop(id: string): Promise<ContainerInfo> {
    return this.act(id, "stop");
  }

  restart(id: string): Promise<ContainerInfo> {
    return this.act(id, "restart");
  }

  /** Deletes a container, its engine objects and its workspace. */
  async delete(id: string): Promise<void> {
    await this.c.request("DELETE", `/api/v1/containers/${encodeURIComponent(id)}`);
  }

  /** Polls until the container runs; a container that settles failed, stopped or deleting is a StateError. */
  async waitRunning(id: string, timeoutMs = 300_000): Promise<ContainerInfo> {
    const deadline = Date.now() + timeoutMs;
    for (let n = 1; ; n++) {
      const i = infoOf(await this.c.request("GET", `/api/v1/containers/${encodeURIComponent(id)}`));
      if (i.status === "running") return i;
      if (["failed", "stopped", "deleting"].includes(i.status)) throw new StateError(id, i.status, i.statusReason, "running");
      if (Date.now() > deadline) throw new StateError(id, i.status, `still ${i.status} after ${timeoutMs} ms`, "running");
      await sleep(Math.min(n * 100, 1000));
    }
  }
}
