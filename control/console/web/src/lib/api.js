// The console's only way to the server: same-origin calls to the public
// API with the session cookie, the CSRF token on state-changing calls,
// every answer's signature checked (sig.js), one token refresh on 401.
import { verify, SignatureError } from "./sig.js";

export { SignatureError };

const SESSION = "/api/v1/console/session";
let csrf = "";
let refreshing = null;
let onSignedOut = () => {};

export function setCsrf(token) {
  csrf = token || "";
}

export function whenSignedOut(f) {
  onSignedOut = f;
}

export class ApiError extends Error {
  constructor(status, code, message, data) {
    super(message || `request failed with status ${status}`);
    this.status = status;
    this.code = code || "";
    this.data = data;
  }
}

function pathOf(url) {
  return new URL(url, location.origin).pathname;
}

async function refresh() {
  if (!refreshing) {
    refreshing = send("POST", SESSION + "/refresh", {}, false)
      .then((r) => {
        setCsrf(r.data?.csrf_token);
        return true;
      })
      .catch(() => false)
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

// fetchOnce is fetch, with a GET or HEAD that failed in the network asked
// again, twice at most: the browser drops requests in flight when the
// machine's network interfaces change (a container engine adding a
// bridge), and such a read changes nothing. An abort, and any other
// method, is the caller's to see.
async function fetchOnce(url, init) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, init);
    } catch (e) {
      if (e?.name === "AbortError" || (init.method !== "GET" && init.method !== "HEAD") || attempt > 2) throw e;
      await new Promise((r) => setTimeout(r, 200 * attempt));
    }
  }
}

async function send(method, url, opts, retry) {
  const headers = { Accept: "application/json", ...(opts.headers || {}) };
  let body;
  if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  if (method !== "GET" && method !== "HEAD" && csrf) headers["X-CSRF-Token"] = csrf;
  const resp = await fetchOnce(url, { method, headers, body, credentials: "same-origin", cache: "no-store", signal: opts.signal });
  const bytes = new Uint8Array(await resp.arrayBuffer());
  await verify(resp, bytes, pathOf(url));
  if (resp.status === 401 && retry && !url.startsWith(SESSION)) {
    if (await refresh()) return send(method, url, opts, false);
    onSignedOut();
  }
  const type = resp.headers.get("Content-Type") || "";
  let json = null;
  if (type.includes("json") && bytes.length) json = JSON.parse(new TextDecoder().decode(bytes));
  if (!resp.ok) throw new ApiError(resp.status, json?.error, json?.message, json);
  if (opts.raw) return { status: resp.status, bytes, type, headers: resp.headers };
  return { status: resp.status, data: json?.data, message: json?.message || "", headers: resp.headers };
}

// api calls the API: api("GET", "/api/v1/...") answers {status, data, message, headers}
// and throws ApiError (with the envelope's message) or SignatureError.
export function api(method, url, opts = {}) {
  return send(method, url, opts, true);
}

export const get = (url, opts) => api("GET", url, opts);

// download fetches a file through the API (signature checked) and saves it.
export async function download(url, filename) {
  const r = await api("GET", url, { raw: true, headers: { Accept: "*/*" } });
  const blob = new Blob([r.bytes], { type: r.type });
  const href = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = href;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 60000);
}

// qs builds a query string from an object, leaving out empty values.
export function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined && v !== null && v !== "") p.set(k, String(v));
  }
  const s = p.toString();
  return s ? "?" + s : "";
}
