// Per-call cost of a signed GET /api/v1/users/auth/me: raw fetch (body
// read and decoded, no signature check), raw with the answer checked
// by hand as the SDK checks it (WebCrypto), and the SDK's DeckhandClient.me, interleaved in rounds so
// both see the same server and load. Prints the median µs per call of each.
//
// Run by `go test -run '^$' -bench MeTypeScript` in sdk/go, which starts
// the binaries and passes DECKHAND_CONTROL_URL, DECKHAND_EMAIL and
// DECKHAND_PASSWORD; needs the built SDK (npx tsc).
import { DeckhandClient } from "./dist/index.js";

const ROUNDS = 15, CALLS = 200;
const base = process.env.DECKHAND_CONTROL_URL;
const c = new DeckhandClient(base);
await c.login(process.env.DECKHAND_EMAIL, process.env.DECKHAND_PASSWORD);
const headers = { Authorization: `Bearer ${c.token}`, Accept: "application/json" };

async function raw() {
  const r = await fetch(`${base}/api/v1/users/auth/me`, { headers });
  const body = await r.json();
  if (r.status !== 200) throw new Error(String(r.status));
  return body.data;
}
const set = await (await fetch(`${base}/api/v1/meta/public-key`)).json();
const hexb = (s) => Uint8Array.from(s.match(/../g), (x) => parseInt(x, 16));
const key = await crypto.subtle.importKey("raw", hexb(set.data.keys[0].public_key_hex), { name: "Ed25519" }, false, ["verify"]);

// What a careful raw client does: the answer checked by hand as the SDK
// checks it (signature, binding to a fresh nonce, envelope status).
async function rawVerify() {
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(18)))).replace(/\+/g, "-").replace(/\//g, "_");
  const r = await fetch(`${base}/api/v1/users/auth/me`, { headers: { ...headers, "X-Service-Nonce": nonce } });
  const body = new Uint8Array(await r.arrayBuffer());
  const h = r.headers.get("X-Service-Signature");
  const t = h.slice(2, h.indexOf(","));
  const prefix = new TextEncoder().encode(`${t}.`);
  const data = new Uint8Array(prefix.length + body.length);
  data.set(prefix);
  data.set(body, prefix.length);
  if (!(await crypto.subtle.verify({ name: "Ed25519" }, key, hexb(h.slice(h.lastIndexOf(",sig=") + 5)), data))) throw new Error("bad signature");
  const [bt, , , bsig] = r.headers.get("X-Service-Binding").split(",");
  const sum = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", body)), (x) => x.toString(16).padStart(2, "0")).join("");
  const bdata = new TextEncoder().encode(["deckhand-binding-v1", bt.slice(2), "200", "GET", "/api/v1/users/auth/me", "", nonce, sum].join("\n"));
  if (!(await crypto.subtle.verify({ name: "Ed25519" }, key, hexb(bsig.slice(4)), bdata))) throw new Error("bad binding");
  const env = JSON.parse(new TextDecoder().decode(body));
  if (env.statusCode !== r.status) throw new Error("status");
  return env.data;
}
const sdk = () => c.me();

const res = { raw: [], "raw+verify": [], sdk: [] };
for (let i = 0; i < 3; i++) { await raw(); await rawVerify(); await sdk(); }
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, fn] of [["raw", raw], ["raw+verify", rawVerify], ["sdk", sdk]]) {
    const t = performance.now();
    for (let i = 0; i < CALLS; i++) await fn();
    res[name].push(((performance.now() - t) / CALLS) * 1000);
  }
}
const median = (v) => v.sort((a, b) => a - b)[v.length >> 1];
for (const [name, v] of Object.entries(res)) console.log(name, median(v).toFixed(1));
