/**
 * Verification of the control plane's answers with WebCrypto Ed25519:
 *
 *   X-Service-Signature: t=<unix_ts>,kid=<key_id>,path=<url_path>,sig=<128 hex>
 *
 * The signed data is `<t>.` followed by the body's bytes. The key set
 * (/api/v1/meta/public-key) is kept 24 hours and fetched again when an
 * answer names a kid it lacks (at most once per 5 s for unknown kids); t
 * must be within 300 s of this machine's clock.
 */

export const SIGNATURE_HEADER = "X-Service-Signature";
export const PUBLIC_KEY_PATH = "/api/v1/meta/public-key";
export const KEY_CACHE_TTL_MS = 24 * 3600 * 1000;
export const REPLAY_TOLERANCE_S = 300;
const MIN_REFETCH_MS = 5000;

export const NONCE_HEADER = "X-Service-Nonce";
export const BINDING_HEADER = "X-Service-Binding";

export class VerifyError extends Error {}

/** A fresh nonce: 24 characters of base64url from 18 random bytes. */
export function newNonce(): string {
  const b = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_");
}

/** What a binding signature covers: the request sent and the answer received. */
export interface Binding {
  status: number;
  method: string;
  path: string;
  etag: string;
  nonce: string;
  body: Uint8Array;
}

function toHex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * The signed data of a binding, one field a line: deckhand-binding-v1, t,
 * status, method, path, ETag, nonce, hex SHA-256 of the body.
 */
async function bindingData(t: number, b: Binding): Promise<Uint8Array> {
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", b.body as BufferSource));
  return encoder.encode(["deckhand-binding-v1", String(t), String(b.status), b.method, b.path, b.etag, b.nonce, toHex(sum)].join("\n"));
}

function parseBinding(v: string | null): { t: number; kid: string; status: number; sig: Uint8Array } {
  if (!v) throw new VerifyError(`missing ${BINDING_HEADER} header on an answer that was asked for one`);
  const parts = v.split(",");
  const m = parts.length === 4 ? parts.map((p, i) => p.startsWith(["t=", "kid=", "status=", "sig="][i]) ? p.slice(p.indexOf("=") + 1) : null) : null;
  if (!m || m.includes(null) || !/^\d+$/.test(m[0]!) || !m[1] || !/^\d{3}$/.test(m[2]!)) throw new VerifyError(`malformed ${BINDING_HEADER} header`);
  const sig = hex(m[3]!);
  if (!sig || sig.length !== 64) throw new VerifyError(`malformed ${BINDING_HEADER} header: sig is not 64 bytes of hex`);
  return { t: Number(m[0]), kid: m[1]!, status: Number(m[2]), sig };
}

/** Refuses a control-plane envelope whose statusCode is not the status it came with. */
export function checkEnvelopeStatus(status: number, body: Uint8Array): void {
  if (body.length === 0 || body[0] !== 0x7b) return;
  let code: unknown;
  try {
    code = JSON.parse(new TextDecoder().decode(body))?.statusCode;
  } catch {
    return;
  }
  if (typeof code === "number" && code !== status) {
    throw new VerifyError(`the answer's status is not the one signed: the signed body says ${code}, the answer came as ${status}`);
  }
}

interface Parsed {
  t: number;
  kid: string;
  path: string;
  sig: Uint8Array;
}

function hex(s: string): Uint8Array | null {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) return null;
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function parseSignature(v: string | null): Parsed {
  if (!v) throw new VerifyError(`missing ${SIGNATURE_HEADER} header`);
  if (!v.startsWith("t=")) throw new VerifyError("malformed signature: must start with t=");
  let rest = v.slice(2);
  const k = rest.indexOf(",kid=");
  if (k < 0 || !/^\d+$/.test(rest.slice(0, k))) throw new VerifyError("malformed signature: t");
  const t = Number(rest.slice(0, k));
  rest = rest.slice(k + 5);
  const p = rest.indexOf(",path=");
  if (p <= 0) throw new VerifyError("malformed signature: kid");
  const kid = rest.slice(0, p);
  rest = rest.slice(p + 6);
  const s = rest.lastIndexOf(",sig=");
  if (s < 0) throw new VerifyError("malformed signature: sig missing");
  const sig = hex(rest.slice(s + 5));
  if (!sig || sig.length !== 64) throw new VerifyError("malformed signature: sig is not 64 bytes of hex");
  return { t, kid, path: rest.slice(0, s), sig };
}

const encoder = new TextEncoder();

function signedData(t: number, body: Uint8Array): Uint8Array {
  const prefix = encoder.encode(`${t}.`);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix);
  out.set(body, prefix.length);
  return out;
}

export type RawFetch = (url: string) => Promise<Response>;

export class Verifier {
  private keys: Map<string, CryptoKey> | null = null;
  private fetchedAt = 0;
  private unknownAt = 0;
  private pending: Promise<void> | null = null;
  fetches = 0;

  constructor(
    private readonly base: string,
    private readonly fetchRaw: RawFetch,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(header: string | null, path: string, body: Uint8Array): Promise<void> {
    const s = parseSignature(header);
    if (s.path !== path) throw new VerifyError(`signed path ${JSON.stringify(s.path)} differs from the requested ${JSON.stringify(path)}`);
    if (Math.abs(this.now() / 1000 - s.t) > REPLAY_TOLERANCE_S) {
      throw new VerifyError(`signature timestamp t=${s.t} outside the replay window`);
    }
    const key = await this.key(s.kid);
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, s.sig as BufferSource, signedData(s.t, body) as BufferSource);
    if (!ok) throw new VerifyError("signature does not verify");
  }

  /**
   * Checks an answer's X-Service-Binding against the request that asked
   * for it: the status first, the replay window, then the signature.
   */
  async verifyBinding(header: string | null, b: Binding): Promise<void> {
    const s = parseBinding(header);
    if (s.status !== b.status) throw new VerifyError(`the answer's status is not the one signed: signed ${s.status}, received ${b.status}`);
    if (Math.abs(this.now() / 1000 - s.t) > REPLAY_TOLERANCE_S) {
      throw new VerifyError(`binding timestamp t=${s.t} outside the replay window`);
    }
    const key = await this.key(s.kid);
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, s.sig as BufferSource, (await bindingData(s.t, b)) as BufferSource);
    if (!ok) throw new VerifyError("the binding (status, method, path, ETag, nonce or body) differs from what was signed");
  }

  private async key(kid: string): Promise<CryptoKey> {
    const now = this.now();
    const had = this.keys;
    const fresh = had !== null && now - this.fetchedAt < KEY_CACHE_TTL_MS;
    const k = had?.get(kid);
    if (k && fresh) return k;
    const unknown = had !== null && !k;
    if (unknown && now - this.unknownAt < MIN_REFETCH_MS) throw new VerifyError(`signed with an unknown key ${JSON.stringify(kid)}`);
    if (unknown) this.unknownAt = now;
    try {
      await this.refresh();
    } catch (e) {
      if (k) return k; // a failed refresh keeps the keys it had
      throw e;
    }
    const got = this.keys!.get(kid);
    if (!got) throw new VerifyError(`signed with an unknown key ${JSON.stringify(kid)}`);
    return got;
  }

  private refresh(): Promise<void> {
    if (!this.pending) {
      this.pending = this.load().finally(() => {
        this.pending = null;
        this.fetches++;
      });
    }
    return this.pending;
  }

  private async load(): Promise<void> {
    const resp = await this.fetchRaw(this.base + PUBLIC_KEY_PATH);
    const body = new Uint8Array(await resp.arrayBuffer());
    if (resp.status !== 200) throw new VerifyError(`fetch the key set: status ${resp.status}`);
    const set = JSON.parse(new TextDecoder().decode(body)).data as { keys: { kid: string; algorithm: string; public_key_hex: string }[] };
    const keys = new Map<string, CryptoKey>();
    for (const k of set.keys) {
      const raw = hex(k.public_key_hex);
      if (k.algorithm !== "ed25519" || !raw || raw.length !== 32) throw new VerifyError(`key ${k.kid} is not a 32-byte ed25519 key`);
      keys.set(k.kid, await crypto.subtle.importKey("raw", raw as BufferSource, { name: "Ed25519" }, false, ["verify"]));
    }
    // The set is itself signed: it must verify with a key it holds.
    const s = parseSignature(resp.headers.get(SIGNATURE_HEADER));
    const key = keys.get(s.kid);
    if (!key || !(await crypto.subtle.verify({ name: "Ed25519" }, key, s.sig as BufferSource, signedData(s.t, body) as BufferSource))) {
      throw new VerifyError("the key set's signature does not verify");
    }
    this.keys = keys;
    this.fetchedAt = this.now();
  }
}
