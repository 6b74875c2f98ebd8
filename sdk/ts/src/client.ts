import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./gen/control.js";
import { DeckhandError, SignatureError } from "./errors.js";
import { Containers } from "./containers.js";
import type { Route } from "./container.js";
import { BINDING_HEADER, NONCE_HEADER, SIGNATURE_HEADER, Verifier, VerifyError, checkEnvelopeStatus, newNonce } from "./signature.js";

export const API_VERSION = "v1";

// Variables, so that bundlers for browsers leave them alone.
const nodeFs = "node:fs";
const nodeOs = "node:os";
export const DEFAULT_PAGE_SIZE = 100;

export type Schemas = components["schemas"];

export interface ClientOptions {
  /** A session token (login sets it) or an auth token (svc_...). */
  token?: string;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** The clock the replay window is judged by, in ms (default Date.now). */
  now?: () => number;
  /** The credential container handles send to their agents (default: token). */
  agentToken?: string;
  /** How container handles reach their agents: proxy (default, the per-service URLs) or agent_addr. */
  agentRoute?: Route;
}

/**
 * The control plane's client. Every answer, errors included, must carry a
 * valid X-Service-Signature before anything of it is read; one that does
 * not is a SignatureError. `api` is the typed openapi-fetch client of the
 * whole document, sending through the same verification.
 */
export class DeckhandClient {
  readonly baseUrl: string;
  readonly api: Client<paths>;
  token?: string;
  /** Creates, finds and drives containers. */
  readonly containers: Containers;
  private readonly verifier: Verifier;
  private readonly send: typeof fetch;

  /**
   * A client from the CLI's login file (Node): $DECKHAND_CONFIG, else
   * $XDG_CONFIG_HOME/deckhand/config.json, else ~/.config/deckhand/config.json.
   */
  static async fromLogin(o: ClientOptions = {}): Promise<DeckhandClient> {
    const fs = await import(nodeFs);
    const os = await import(nodeOs);
    const env = (globalThis as any).process?.env ?? {};
    const path: string = env.DECKHAND_CONFIG || `${env.XDG_CONFIG_HOME || `${os.homedir()}/.config`}/deckhand/config.json`;
    let raw: string;
    try {
      const st = await fs.promises.stat(path);
      if (st.mode & 0o077) throw Object.assign(new Error(`deckhand: ${path} is readable by others: it holds a secret; chmod 600 it`), { mode: true });
      raw = await fs.promises.readFile(path, "utf8");
    } catch (e) {
      if ((e as { mode?: boolean }).mode) throw e;
      throw new Error(`deckhand: no login at ${path}: run \`deckhand login\` first, or pass a URL and a token`);
    }
    const cfg = JSON.parse(raw);
    if (!cfg.control_url) throw new Error(`deckhand: ${path}: control_url: missing; run \`deckhand login\``);
    const token = o.token ?? cfg.credential?.token;
    if (!token) throw new Error(`deckhand: ${path}: credential: missing; run \`deckhand login\``);
    return new DeckhandClient(cfg.control_url, { ...o, token });
  }

  constructor(baseUrl: string, o: ClientOptions = {}) {
    const u = new URL(baseUrl);
    if ((u.protocol !== "http:" && u.protocol !== "https:") || u.search) {
      throw new Error(`deckhand: control plane URL ${baseUrl}: must be http:// or https:// with a host`);
    }
    this.baseUrl = u.origin + u.pathname.replace(/\/+$/, "");
    this.token = o.token;
    this.send = o.fetch ?? globalThis.fetch.bind(globalThis);
    this.verifier = new Verifier(this.baseUrl, (url) => this.send(url), o.now);
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (r) => this.fetch(r) });
    this.containers = new Containers(this, { token: o.agentToken, route: o.agentRoute, fetch: o.fetch });
  }

  /** Key-set fetches made so far. */
  get keyFetches(): number {
    return this.verifier.fetches;
  }

  /**
   * Sends req with the token and answers the verified answer (its body the
   * bytes that were checked): the fetch of the typed client `api`.
   */
  async fetch(req: Request): Promise<Response> {
    if (this.token && !req.headers.has("Authorization")) req.headers.set("Authorization", `Bearer ${this.token}`);
    const nonce = newNonce();
    req.headers.set(NONCE_HEADER, nonce);
    const v = await this.verified(req.method, new URL(req.url).pathname, nonce, this.send(req));
    return new Response(v.status === 204 || v.status === 304 ? null : (v.body as BodyInit), {
      status: v.status,
      statusText: v.statusText,
      headers: v.headers,
    });
  }

  /**
   * Reads an answer whole and checks it: its signature against path, its
   * binding to this request (status, method, path, ETag, nonce, body) and
   * that an envelope's statusCode is the status it came with.
   */
  private async verified(method: string, path: string, nonce: string, pending: Promise<Response>) {
    const resp = await pending;
    const body = new Uint8Array(await resp.arrayBuffer());
    try {
      await this.verifier.verify(resp.headers.get(SIGNATURE_HEADER), path, body);
      await this.verifier.verifyBinding(resp.headers.get(BINDING_HEADER), {
        status: resp.status, method, path, etag: resp.headers.get("ETag") ?? "", nonce, body,
      });
      checkEnvelopeStatus(resp.status, body);
    } catch (e) {
      if (e instanceof VerifyError) throw new SignatureError(method, path, e.message);
      throw e;
    }
    return { status: resp.status, statusText: resp.statusText, headers: resp.headers, body };
  }

  /** A JSON call: answers the envelope's data; 400+ throws DeckhandError. */
  async request<T = unknown>(method: string, path: string, query?: Record<string, string | number>, body?: unknown): Promise<T> {
    let url = this.baseUrl + path;
    if (query && Object.keys(query).length) url += "?" + new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
    const nonce = newNonce();
    const headers: Record<string, string> = { Accept: "application/json", [NONCE_HEADER]: nonce };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const signedPath = new URL(url).pathname;
    const v = await this.verified(method, signedPath, nonce, this.send(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
    if (v.status >= 400) throw DeckhandError.fromBody(method, path, v.status, v.body);
    if (v.body.length === 0) return undefined as T;
    return JSON.parse(new TextDecoder().decode(v.body)).data as T;
  }

  /** Signs in and keeps the session token. */
  async login(email: string, password: string): Promise<Schemas["LoginResult"]> {
    const r = await this.request<Schemas["LoginResult"]>("POST", "/api/v1/users/auth/login", undefined, { email, password });
    if (r.requires_2fa) throw new DeckhandError(200, "REQUIRES_2FA", "the account needs its second factor", "", "POST", "/api/v1/users/auth/login");
    this.token = r.token;
    return r;
  }

  /** The signed-in user. */
  me(): Promise<Schemas["User"]> {
    return this.request("GET", "/api/v1/users/auth/me");
  }

  /** A long-lived auth token (svc_...); its secret is in `token`, shown once. */
  createToken(alias: string, ipWhitelist?: string[]): Promise<Schemas["AuthToken"]> {
    return this.request("POST", "/api/v1/auth/tokens", undefined, { alias, ...(ipWhitelist ? { ip_whitelist: ipWhitelist } : {}) });
  }

  transferToAI(amount: string, idempotencyKey?: string): Promise<Schemas["Receipt"]> {
    return this.request("POST", "/api/v1/wallet/transfer-to-ai", undefined, { amount, ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}) });
  }

  /**
   * Every item of a paginated list (data[key] with a pagination object:
   * transactions, invoices, ai-fees, events, images, projects, containers),
   * a page at a time.
   */
  async *pages<T>(path: string, key: string, pageSize = 0, query: Record<string, string | number> = {}): AsyncGenerator<T> {
    for (let page = 1; ; page++) {
      const data = await this.request<Record<string, unknown>>("GET", path, { ...query, page, limit: pageSize || DEFAULT_PAGE_SIZE });
      const items = (data[key] as T[] | undefined) ?? [];
      yield* items;
      const totalPages = (data.pagination as Schemas["Pagination"] | undefined)?.totalPages ?? 0;
      if (items.length === 0 || page >= totalPages) return;
    }
  }

  /** The wallet's transactions, newest first, a page at a time. */
  transactions(pageSize = 0): AsyncGenerator<Schemas["Transaction"]> {
    return this.pages("/api/v1/wallet/transactions", "transactions", pageSize);
  }

  invoices(pageSize = 0): AsyncGenerator<Schemas["Invoice"]> {
    return this.pages("/api/v1/wallet/invoices", "invoices", pageSize);
  }

  generateInvoice(transactionId: string): Promise<Schemas["Generated"]> {
    return this.request("POST", `/api/v1/wallet/invoices/generate/${encodeURIComponent(transactionId)}`);
  }

  /** The invoice's PDF bytes (verified). */
  async invoicePDF(invoiceId: string): Promise<Uint8Array> {
    const path = `/api/v1/wallet/invoices/${encodeURIComponent(invoiceId)}/pdf`;
    const nonce = newNonce();
    const headers: Record<string, string> = { [NONCE_HEADER]: nonce, ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}) };
    const v = await this.verified("GET", path, nonce, this.send(this.baseUrl + path, { headers }));
    if (v.status >= 400) throw DeckhandError.fromBody("GET", path, v.status, v.body);
    return v.body;
  }
}
