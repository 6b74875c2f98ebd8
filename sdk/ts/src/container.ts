import createClient, { type Client } from "openapi-fetch";
import type { components as P, paths as ProcessPaths } from "./gen/process.js";
import type { components as F, paths as FilesPaths } from "./gen/files.js";
import { DeckhandError } from "./errors.js";
import { Terminal, type TerminalOptions } from "./terminal.js";

export const UPLOAD_CHUNK = 8 << 20;
export const MAX_RECONNECTS = 8;
/** How long the access tokens a handle mints last. */
export const ACCESS_TOKEN_TTL_S = 3600;
/** A handle mints a new access token when less than this is left. */
export const ACCESS_TOKEN_RENEW_MS = 300_000;

export type Process = P["schemas"]["Process"];
export type RunResult = P["schemas"]["RunResult"];
export type RunInput = P["schemas"]["RunInput"];
export type StartInput = P["schemas"]["StartInput"];

/** One piece of a process's output. */
export interface Output {
  stream: "stdout" | "stderr";
  /** Of data's first byte in the process's whole output. */
  offset: number;
  data: Uint8Array;
}

/** A finished upload or download. */
export interface Transfer {
  path: string;
  size: number;
  sha256: string;
  reconnects: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const backoff = (n: number) => Math.min(n * n * 100, 5000);

interface Hasher {
  update(b: Uint8Array): void;
  hex(): Promise<string>;
}

// nodeCrypto is a variable so that bundlers for browsers leave it alone.
const nodeCrypto = "node:crypto";

/**
 * A streaming SHA-256: Node's crypto where there is one (nothing kept),
 * else the bytes are kept and hashed with WebCrypto at the end.
 */
async function sha256(): Promise<Hasher> {
  const mod = (await import(nodeCrypto).catch(() => null)) as { createHash(a: string): { update(b: Uint8Array): void; digest(e: string): string } } | null;
  if (mod) {
    const h = mod.createHash("sha256");
    return { update: (b) => h.update(b), hex: async () => h.digest("hex") };
  }
  const parts: Uint8Array[] = [];
  return {
    update: (b) => parts.push(b.slice()),
    hex: async () => {
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let o = 0;
      for (const p of parts) {
        all.set(p, o);
        o += p.length;
      }
      const d = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
      return Array.from(d, (x) => x.toString(16).padStart(2, "0")).join("");
    },
  };
}

function concat(parts: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  return all;
}

/** How container handles reach their agents. */
export type Route = "proxy" | "agent_addr";

/** The control plane's record of a container. */
export interface ContainerInfo {
  id: string;
  projectId: string;
  name: string;
  imageId: string;
  imageName: string;
  /** creating, running, paused, stopped, failed or deleting. */
  status: string;
  statusReason: string;
  autostart: boolean;
  cpus: number;
  memoryMb: number;
  env: Record<string, string>;
  /** docker, or none when the control plane keeps records only. */
  runtime: string;
  /** Each agent service (process, files, terminal ...) → its URL through the platform proxy. */
  urls: Record<string, string>;
  /** Where the control plane reaches the agent's gateway (host:port) while it runs. */
  agentAddr: string;
  createdAt: string;
  updatedAt: string;
}

export interface ContainerOptions {
  /** The credential sent to the agent as Authorization: Bearer. */
  token?: string;
  fetch?: typeof fetch;
  /** proxy (default): the per-service URLs; agent_addr: the record's agent address. */
  route?: Route;
}

/** How a program ended; a non-zero exit is no error. */
export interface Result {
  id: string;
  stdout: string;
  stderr: string;
  /** -1 when it has none (failed to start). */
  exitCode: number;
  /** exited, killed, timed_out or failed_to_start (then error says why). */
  state: string;
  signal: string;
  error: string;
  truncated: boolean;
}

/** A program to run: argv, or a shell line for /bin/sh -c. */
export interface Command {
  cmd?: string[];
  shell?: string;
  env?: Record<string, string>;
  cwd?: string;
  /** Written to standard input, which is then closed. */
  stdin?: string | Uint8Array;
  timeoutMs?: number;
}

function commandBody(c: Command): Record<string, unknown> {
  if (!!c.cmd?.length === !!c.shell) throw new Error("deckhand: Command: give cmd or shell, not both or neither");
  const b: Record<string, unknown> = c.cmd?.length ? { cmd: c.cmd } : { shell: c.shell };
  if (c.env) b.env = c.env;
  if (c.cwd) b.cwd = c.cwd;
  if (c.timeoutMs) b.timeout_ms = c.timeoutMs;
  if (c.stdin !== undefined) {
    const bytes = typeof c.stdin === "string" ? new TextEncoder().encode(c.stdin) : c.stdin;
    b.stdin = btoa(String.fromCharCode(...bytes));
    b.stdin_encoding = "base64";
  }
  return b;
}

function resultOf(r: Record<string, any>): Result {
  let { stdout = "", stderr = "" } = r;
  if (r.encoding === "base64") {
    const dec = (x: string) => new TextDecoder().decode(Uint8Array.from(atob(x), (c) => c.charCodeAt(0)));
    stdout = dec(stdout);
    stderr = dec(stderr);
  }
  return { id: r.id, stdout, stderr, exitCode: r.exit_code ?? -1, state: r.state ?? "", signal: r.signal ?? "", error: r.error ?? "", truncated: !!r.truncated };
}

/** A program started in the background. */
export class Running {
  constructor(readonly id: string, readonly pid: number, private readonly box: Container) {}

  /** Calls onOutput with each piece of output, in order, until it ends (resuming after dropped connections). */
  async stream(onOutput: (o: Output) => void | Promise<void>, opts: { signal?: AbortSignal } = {}): Promise<Result> {
    const end = await this.box.stream(this.id, onOutput, opts);
    return resultOf({ ...end, stdout: "", stderr: "" });
  }

  /** Collects stdout and stderr until it ends. */
  async wait(opts: { signal?: AbortSignal } = {}): Promise<Result> {
    const out: Record<string, Uint8Array[]> = { stdout: [], stderr: [] };
    const r = await this.stream((o) => void out[o.stream].push(o.data), opts);
    const join = (parts: Uint8Array[]) => new TextDecoder().decode(concat(parts));
    return { ...r, stdout: join(out.stdout), stderr: join(out.stderr) };
  }

  kill(): Promise<unknown> {
    return this.box.request("DELETE", "process", `/api/v1/process/${encodeURIComponent(this.id)}`);
  }
}

/** Runs programs in a container: container.process. */
export class Processes {
  constructor(private readonly box: Container) {}

  /** Runs a program to its end: cmd is an argv (string[]) or a shell line (string). */
  async run(cmd: string[] | string | Command): Promise<Result> {
    const c: Command = Array.isArray(cmd) ? { cmd } : typeof cmd === "string" ? { shell: cmd } : cmd;
    return resultOf(await this.box.request("POST", "process", "/api/v1/process/run", undefined, commandBody(c)));
  }

  /** Starts a program in the background; its output is kept from the first byte for stream/wait. */
  async start(cmd: string[] | string | Command): Promise<Running> {
    const c: Command = Array.isArray(cmd) ? { cmd } : typeof cmd === "string" ? { shell: cmd } : cmd;
    const p = await this.box.request<Process>("POST", "process", "/api/v1/process", undefined, { ...commandBody(c), hold_output: true });
    return new Running(p.id, p.pid ?? 0, this.box);
  }
}

/** One entry of a directory listing. */
export interface FileInfo {
  name: string;
  path: string;
  type: string;
  size: number;
  mode: string;
  modified: string;
  owner: string;
}

/** Reads and writes files in a container: container.files. */
export class Files {
  constructor(private readonly box: Container) {}

  /** The file's bytes (resumable, checksummed). */
  async read(path: string): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    await this.box.download(path, (b) => void parts.push(b.slice()));
    return concat(parts);
  }

  /** The file's text (UTF-8). */
  async readText(path: string): Promise<string> {
    return new TextDecoder().decode(await this.read(path));
  }

  /** Puts data at path, replacing a file there; it appears whole or not at all. */
  async write(path: string, data: string | Uint8Array): Promise<void> {
    const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const u = this.box.serviceUrl("files", "/api/v1/files/content", { path, overwrite: true });
    const resp = await this.box.fetch(new Request(u, { method: "PUT", headers: { "Content-Type": "application/octet-stream" }, body: body as BodyInit }));
    const raw = new Uint8Array(await resp.arrayBuffer());
    if (resp.status >= 300) throw DeckhandError.fromBody("PUT", "/api/v1/files/content", resp.status, raw);
  }

  /** The entries of the directory at path. */
  async list(path: string): Promise<FileInfo[]> {
    const l = await this.box.request<{ entries: Record<string, any>[] }>("GET", "files", "/api/v1/files", { path });
    return l.entries.map((e) => ({ name: e.name, path: e.path, type: e.type, size: e.size, mode: e.mode, modified: e.modified, owner: e.owner }));
  }

  /** Copies a local file into the container (resumable, checksummed). */
  async upload(local: string, path: string): Promise<Transfer> {
    const fs = await import(nodeFs);
    return this.box.upload(path, new Uint8Array(await fs.promises.readFile(local)));
  }

  /** Copies a file out of the container to a local path (written beside, renamed into place once whole). */
  async download(path: string, local: string): Promise<Transfer> {
    const fs = await import(nodeFs);
    const tmp = `${local}.deckhand-part`;
    const fh = await fs.promises.open(tmp, "w");
    try {
      const t = await this.box.download(path, async (b) => void (await fh.write(b)));
      await fh.close();
      await fs.promises.rename(tmp, local);
      return t;
    } catch (e) {
      await fh.close().catch(() => {});
      await fs.promises.rm(tmp, { force: true });
      throw e;
    }
  }
}

// nodeFs is a variable so that bundlers for browsers leave it alone.
const nodeFs = "node:fs";

/**
 * One container: its agent's services (process, files, terminal, url) and,
 * for a handle from client.containers, its record. The agent is reached
 * through the platform proxy's per-service URLs, the record's agent
 * address, or (new Container(gatewayUrl)) a gateway URL. The token goes as
 * Authorization: Bearer.
 */
export class Container {
  readonly baseUrl: string;
  /** The typed openapi-fetch clients of the process and files documents. */
  readonly processApi: Client<ProcessPaths>;
  readonly filesApi: Client<FilesPaths>;
  readonly process: Processes;
  readonly files: Files;
  info: ContainerInfo | null = null;
  private explicit: boolean;
  private tokenExp = 0;
  private readonly send: typeof fetch;
  private readonly route: Route;
  /** Set by client.containers: the control plane's container API. */
  lifecycle: {
    get(id: string): Promise<ContainerInfo>;
    waitRunning(id: string): Promise<ContainerInfo>;
    delete(id: string): Promise<void>;
    mint(id: string, ttlSeconds: number): Promise<{ token: string; expires_at: string }>;
  } | null = null;

  /** A handle of the agent gateway at gatewayUrl ("" for a handle from client.containers). */
  constructor(gatewayUrl: string, private readonly o: ContainerOptions = {}) {
    this.o = { ...o };
    this.explicit = !!o.token;
    if (gatewayUrl) {
      const u = new URL(gatewayUrl);
      this.baseUrl = u.origin + u.pathname.replace(/\/+$/, "");
    } else {
      this.baseUrl = "";
    }
    this.route = o.route ?? "proxy";
    this.send = o.fetch ?? globalThis.fetch.bind(globalThis);
    this.processApi = this.service<ProcessPaths>("process");
    this.filesApi = this.service<FilesPaths>("files");
    this.process = new Processes(this);
    this.files = new Files(this);
  }

  get id(): string {
    return this.info?.id ?? "";
  }

  /** The credential sent to the agent. */
  get token(): string | undefined {
    return this.o.token;
  }

  /** The same container, sending another token to its agent. */
  withToken(token: string): Container {
    const c = new Container(this.baseUrl, { ...this.o, token });
    c.info = this.info;
    c.lifecycle = this.lifecycle;
    return c;
  }

  /**
   * Mints an access token for the container's agent (POST
   * /api/v1/containers/{id}/access-tokens: signed by the control plane,
   * every service, ACCESS_TOKEN_TTL_S) and uses it from now on. A handle
   * from client.containers without an explicit token does this by itself on
   * its first call to the agent and again before the token expires.
   */
  async grant(): Promise<void> {
    if (!this.lifecycle) throw new Error("deckhand: this handle has no control-plane record (use client.containers)");
    const at = await this.lifecycle.mint(this.id, ACCESS_TOKEN_TTL_S);
    this.o.token = at.token;
    this.tokenExp = Date.parse(at.expires_at);
    this.explicit = false;
  }

  /** The bearer for the agent: the explicit token, or a minted access token renewed before it expires. */
  private async bearer(): Promise<string | undefined> {
    if (this.explicit || !this.lifecycle || (this.o.token && this.tokenExp - Date.now() > ACCESS_TOKEN_RENEW_MS)) return this.o.token;
    await this.grant();
    return this.o.token;
  }

  /** Waits until the container runs and keeps its record (agent address, URLs). */
  async waitRunning(): Promise<ContainerInfo> {
    if (!this.lifecycle) throw new Error("deckhand: this handle has no control-plane record (use client.containers)");
    this.info = await this.lifecycle.waitRunning(this.id);
    return this.info;
  }

  /** Fetches the record again. */
  async refresh(): Promise<ContainerInfo> {
    if (!this.lifecycle) throw new Error("deckhand: this handle has no control-plane record (use client.containers)");
    this.info = await this.lifecycle.get(this.id);
    return this.info;
  }

  /** Deletes the container. */
  async delete(): Promise<void> {
    if (!this.lifecycle) throw new Error("deckhand: this handle has no control-plane record (use client.containers)");
    await this.lifecycle.delete(this.id);
  }

  /**
   * The URL of one of the container's services, or of a port preview as
   * "p<port>", through the platform proxy (through the gateway for a
   * gateway handle).
   */
  url(service: string): string {
    if (this.baseUrl) return `${this.baseUrl}/_/${service}`;
    const urls = this.info?.urls ?? {};
    if (urls[service]) return urls[service];
    for (const [svc, u] of Object.entries(urls)) {
      const marker = `-${svc}-1.`;
      const i = u.indexOf(marker);
      if (i >= 0) return u.slice(0, i) + `-${service}-1.` + u.slice(i + marker.length);
    }
    return "";
  }

  /** Where requests to a service go: url(), or the agent address with route agent_addr. */
  private base(service: string): string {
    if (!this.baseUrl && this.route === "agent_addr" && this.info?.agentAddr) return `http://${this.info.agentAddr}/_/${service}`;
    const u = this.url(service);
    if (!u) throw new Error(`deckhand: container ${this.id}: no address for its ${service} service yet (waitRunning first)`);
    return u;
  }

  /** The typed openapi-fetch client of any service's document (types in gen/<service>). */
  service<Paths extends {}>(name: string): Client<Paths> {
    return createClient<Paths>({ baseUrl: "http://placeholder", fetch: (r) => {
      const u = new URL(r.url);
      return this.fetch(new Request(this.base(name) + u.pathname + u.search, r));
    } });
  }

  async fetch(req: Request): Promise<Response> {
    if (!req.headers.has("Authorization")) {
      const tok = await this.bearer();
      if (tok) req.headers.set("Authorization", `Bearer ${tok}`);
    }
    return this.send(req);
  }

  /** The URL of path of service, with query. */
  serviceUrl(service: string, path: string, query?: Record<string, string | number | boolean>): URL {
    const u = new URL(`${this.base(service)}${path}`);
    for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, String(v));
    return u;
  }

  private url_(service: string, path: string, query?: Record<string, string | number | boolean>): URL {
    return this.serviceUrl(service, path, query);
  }

  /** A JSON call to service: the decoded answer; 300+ throws DeckhandError. */
  async request<T = unknown>(method: string, service: string, path: string, query?: Record<string, string | number | boolean>, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const resp = await this.fetch(new Request(this.url_(service, path, query), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
    const raw = new Uint8Array(await resp.arrayBuffer());
    if (resp.status >= 300) throw DeckhandError.fromBody(method, path, resp.status, raw);
    return raw.length ? JSON.parse(new TextDecoder().decode(raw)) : (undefined as T);
  }

  /** Runs a command to its end: stdout, stderr, exit_code, state ... */
  run(input: RunInput): Promise<RunResult> {
    return this.request("POST", "process", "/api/v1/process/run", undefined, input);
  }

  /** Starts a command in the background: its record. */
  start(input: StartInput): Promise<Process> {
    return this.request("POST", "process", "/api/v1/process", undefined, input);
  }

  writeStdin(id: string, data: Uint8Array): Promise<unknown> {
    return this.request("POST", "process", `/api/v1/process/${encodeURIComponent(id)}/stdin`, undefined, {
      data: btoa(String.fromCharCode(...data)),
      encoding: "base64",
    });
  }

  /**
   * Follows the output until the process ends, calling onOutput with each
   * piece in order; answers the final record. A dropped connection resumes
   * from the offset after the last piece delivered, so each byte arrives
   * once.
   */
  async stream(id: string, onOutput: (o: Output) => void | Promise<void>, opts: { since?: number; signal?: AbortSignal } = {}): Promise<Process> {
    let off = opts.since ?? 0;
    let fails = 0;
    for (;;) {
      const start = off;
      let err: unknown;
      try {
        const r = await this.follow(id, off, onOutput, opts.signal, (o) => (off = o));
        if (r) return r;
        err = new Error("the output stream ended early");
      } catch (e) {
        if (e instanceof DeckhandError || opts.signal?.aborted || (e as { callback?: boolean }).callback) throw e;
        err = e;
      }
      if (off > start) fails = 0;
      if (++fails > MAX_RECONNECTS) throw new Error(`deckhand: output of ${id}: ${fails - 1} reconnects without progress: ${err}`);
      await sleep(backoff(fails));
    }
  }

  private async follow(id: string, since: number, onOutput: (o: Output) => void | Promise<void>, signal: AbortSignal | undefined, moved: (off: number) => void): Promise<Process | null> {
    const path = `/api/v1/process/${encodeURIComponent(id)}/output`;
    const resp = await this.fetch(new Request(this.url_("process", path, { follow: true, since }), { headers: { Accept: "text/event-stream" }, signal }));
    if (resp.status !== 200) throw DeckhandError.fromBody("GET", path, resp.status, new Uint8Array(await resp.arrayBuffer()));
    const reader = resp.body!.pipeThrough(new TextDecoderStream()).getReader();
    let off = since;
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return null;
        buf += value;
        let i: number;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "output";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
          }
          if (!data) continue;
          const m = JSON.parse(data);
          if (event === "output") {
            let b: Uint8Array = m.encoding === "base64" ? Uint8Array.from(atob(m.data), (c) => c.charCodeAt(0)) : new TextEncoder().encode(m.data);
            let o: number = m.offset;
            const next = o + b.length;
            if (next <= off) continue;
            if (off > o) {
              b = b.subarray(off - o);
              o = off;
            }
            try {
              await onOutput({ stream: m.stream, offset: o, data: b });
            } catch (e) {
              throw Object.assign(e as object, { callback: true });
            }
            off = next;
            moved(off);
          } else if (event === "gap") {
            throw new DeckhandError(0, "GAP", `output ${m.from} to ${m.to} was dropped before it was read`);
          } else if (event === "end") {
            return m.process as Process;
          }
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  checksum(path: string): Promise<F["schemas"]["Checksum"]> {
    return this.request("GET", "files", "/api/v1/files/checksum", { path });
  }

  /**
   * Writes data to path with the resumable upload: PATCHes of UPLOAD_CHUNK;
   * a dropped connection resumes at the service's offset; the service's
   * SHA-256 must equal this side's.
   */
  async upload(path: string, data: Uint8Array | Blob, o: { overwrite?: boolean; mode?: string } = {}): Promise<Transfer> {
    const size = data instanceof Blob ? data.size : data.length;
    const slice = async (a: number, b: number): Promise<Uint8Array> =>
      data instanceof Blob ? new Uint8Array(await data.slice(a, b).arrayBuffer()) : data.subarray(a, b);
    let up = await this.request<F["schemas"]["Upload"]>("POST", "files", "/api/v1/files/uploads", undefined, {
      path, size, overwrite: o.overwrite ?? true, ...(o.mode ? { mode: o.mode } : {}),
    });
    const upath = `/api/v1/files/uploads/${encodeURIComponent(up.id)}`;
    let reconnects = 0;
    let fails = 0;
    while (!up.complete) {
      const off = up.offset;
      const end = Math.min(off + UPLOAD_CHUNK, size);
      let err: unknown;
      try {
        const resp = await this.fetch(new Request(this.url_("files", upath), {
          method: "PATCH",
          headers: { "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(off) },
          body: (await slice(off, end)) as BodyInit,
        }));
        const raw = new Uint8Array(await resp.arrayBuffer());
        if (resp.status === 200) {
          up = JSON.parse(new TextDecoder().decode(raw));
          fails = 0;
          continue;
        }
        err = DeckhandError.fromBody("PATCH", upath, resp.status, raw);
        if (resp.status !== 409 && resp.status < 500) throw err;
      } catch (e) {
        if (e instanceof DeckhandError && e.status !== 409 && e.status < 500) throw e;
        err = e;
      }
      const cur = await this.request<F["schemas"]["Upload"]>("GET", "files", upath);
      if (cur.offset > up.offset) fails = 0;
      up = cur;
      reconnects++;
      if (++fails > MAX_RECONNECTS) throw new Error(`deckhand: upload ${path} stopped at byte ${up.offset}: ${err}`);
      await sleep(backoff(fails));
    }
    const h = await sha256();
    for (let a = 0; a < size; a += UPLOAD_CHUNK) h.update(await slice(a, Math.min(a + UPLOAD_CHUNK, size)));
    const sum = await h.hex();
    const s = await this.checksum(path);
    if (s.sha256 !== sum || s.size !== size) throw new Error(`deckhand: upload ${path}: the container holds SHA-256 ${s.sha256}, sent ${sum}`);
    return { path, size, sha256: sum, reconnects };
  }

  /**
   * Hands path's content to sink piece by piece; a dropped connection
   * resumes with a ranged GET (If-Range on the ETag), and the service's
   * SHA-256 must equal what was handed over.
   */
  async download(path: string, sink: (chunk: Uint8Array) => void | Promise<void>): Promise<Transfer> {
    const h = await sha256();
    let have = 0;
    let total = -1;
    let etag = "";
    let reconnects = 0;
    let fails = 0;
    while (total < 0 || have < total) {
      const start = have;
      try {
        const headers: Record<string, string> = have ? { Range: `bytes=${have}-`, "If-Range": etag } : {};
        const resp = await this.fetch(new Request(this.url_("files", "/api/v1/files/content", { path }), { headers }));
        if (resp.status === 200 && have === 0) {
          etag = resp.headers.get("ETag") ?? "";
          total = Number(resp.headers.get("Content-Length"));
        } else if (resp.status === 206) {
          if (!(resp.headers.get("Content-Range") ?? "").startsWith(`bytes ${have}-`)) throw new DeckhandError(206, "", "answered another range than asked");
        } else if (resp.status === 200) {
          throw new DeckhandError(200, "", `${path} changed during the download`);
        } else {
          throw DeckhandError.fromBody("GET", "/api/v1/files/content", resp.status, new Uint8Array(await resp.arrayBuffer()));
        }
        const reader = resp.body!.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          await sink(value);
          h.update(value);
          have += value.length;
        }
        if (have >= total) break;
      } catch (e) {
        if (e instanceof DeckhandError) throw e;
      }
      if (have > start) fails = 0;
      reconnects++;
      if (++fails > MAX_RECONNECTS) throw new Error(`deckhand: download ${path} stopped at byte ${have}`);
      await sleep(backoff(fails));
    }
    const sum = await h.hex();
    const s = await this.checksum(path);
    if (s.sha256 !== sum || s.etag !== etag) throw new Error(`deckhand: ${path} changed while it was read`);
    return { path, size: have, sha256: sum, reconnects };
  }

  /** A terminal session (attach). */
  terminal(o: TerminalOptions = {}): Promise<Terminal> {
    return this.attach(o);
  }

  /** Attaches to a terminal session, or starts a new shell. */
  attach(o: TerminalOptions = {}): Promise<Terminal> {
    const q: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(o)) if (v !== undefined) q[k] = v;
    const u = this.url_("terminal", "/api/v1/terminal/ws", q);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    return this.bearer().then((tok) => Terminal.open(u.toString(), tok));
  }

  /** A PNG of the container's display (DeckhandError when it has none). */
  async screenshot(): Promise<Uint8Array> {
    const resp = await this.fetch(new Request(this.url_("display", "/api/v1/display/screenshots")));
    const raw = new Uint8Array(await resp.arrayBuffer());
    if (resp.status !== 200) throw DeckhandError.fromBody("GET", "/api/v1/display/screenshots", resp.status, raw);
    return raw;
  }
}
