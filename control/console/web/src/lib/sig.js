// Checks every control-plane answer's X-Service-Signature with WebCrypto
// Ed25519: t=<unix>,kid=<id>,path=<url path>,sig=<hex> over "<t>.<body>".
// Keys come from /api/v1/meta/public-key, are cached by kid and fetched
// again when an unknown kid appears.
const KEYS_PATH = "/api/v1/meta/public-key";
const TOLERANCE_S = 300;

export class SignatureError extends Error {}

const keys = new Map();
let signing = "unknown"; // "on", "off" (the server signs nothing) or "unknown"
let loading = null;
export const stats = { verified: 0, kid: "", listeners: new Set() };

function notify() {
  for (const f of stats.listeners) f();
}

function fromB64url(s) {
  const b = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

function fromHex(h) {
  if (!/^[0-9a-f]*$/i.test(h) || h.length % 2) throw new SignatureError("signature is not hex");
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.substr(i * 2, 2), 16);
  return out;
}

export function parseHeader(v) {
  const out = {};
  for (const part of v.split(",")) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

async function fetchKeys() {
  const resp = await fetch(KEYS_PATH, { headers: { Accept: "application/json" }, cache: "no-store", credentials: "omit" });
  const bytes = new Uint8Array(await resp.arrayBuffer());
  if (resp.status === 503) {
    signing = "off";
    notify();
    return;
  }
  const doc = JSON.parse(new TextDecoder().decode(bytes));
  for (const k of doc.data.keys) {
    if (k.algorithm !== "ed25519" || keys.has(k.kid)) continue;
    keys.set(k.kid, await crypto.subtle.importKey("raw", fromB64url(k.public_key_b64url), { name: "Ed25519" }, false, ["verify"]));
  }
  signing = "on";
  // The key document is signed by one of its own keys.
  await check(resp, bytes, KEYS_PATH, false);
}

function loadKeys() {
  if (!loading) loading = fetchKeys().finally(() => { loading = null; });
  return loading;
}

async function check(resp, bytes, path, mayReload) {
  const hdr = resp.headers.get("X-Service-Signature");
  if (!hdr) {
    if (signing === "off") return;
    throw new SignatureError(`the answer to ${path} is not signed`);
  }
  const f = parseHeader(hdr);
  if (f.path !== path) throw new SignatureError(`the answer to ${path} is signed for ${f.path}`);
  const t = Number(f.t);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > TOLERANCE_S) {
    throw new SignatureError(`the answer to ${path} is signed at another time (t=${f.t})`);
  }
  let key = keys.get(f.kid);
  if (!key && mayReload) {
    await loadKeys();
    key = keys.get(f.kid);
  }
  if (!key) throw new SignatureError(`the answer to ${path} is signed by an unknown key ${f.kid}`);
  const prefix = new TextEncoder().encode(f.t + ".");
  const msg = new Uint8Array(prefix.length + bytes.length);
  msg.set(prefix);
  msg.set(bytes, prefix.length);
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, fromHex(f.sig), msg);
  if (!ok) throw new SignatureError(`the signature of the answer to ${path} does not verify`);
  stats.verified++;
  stats.kid = f.kid;
  notify();
}

// verify throws a SignatureError unless the answer carries a valid
// signature by a key of the server (or the server signs nothing at all).
export async function verify(resp, bytes, path) {
  if (signing === "unknown") await loadKeys();
  return check(resp, bytes, path, true);
}

export function signingState() {
  return signing;
}

// The keys are fetched as the console starts, beside its first calls.
loadKeys().catch(() => {});
