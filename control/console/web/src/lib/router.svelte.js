// A small History API router over pages.json (the server answers exactly
// these paths with the console). Filters and pages live in the query
// string, so a reload or a shared link shows the same list.
import pages from "../pages.json";

const patterns = [...pages.public.map((p) => ({ p, pub: true })), ...pages.signedIn.map((p) => ({ p, pub: false }))];

export function match(path) {
  const segs = path.split("/");
  for (const { p, pub } of patterns) {
    const ps = p.split("/");
    if (ps.length !== segs.length) continue;
    const params = {};
    let ok = true;
    for (let i = 0; i < ps.length && ok; i++) {
      if (ps[i].startsWith(":")) {
        ok = segs[i] !== "";
        params[ps[i].slice(1)] = decodeURIComponent(segs[i]);
      } else ok = ps[i] === segs[i];
    }
    if (ok) return { pattern: p, params, public: pub };
  }
  return null;
}

function read() {
  const m = match(location.pathname);
  return {
    path: location.pathname,
    pattern: m?.pattern || "",
    params: m?.params || {},
    public: m?.public || false,
    query: Object.fromEntries(new URLSearchParams(location.search)),
  };
}

export const route = $state(read());

function update() {
  Object.assign(route, read());
}

export function navigate(to, { replace = false } = {}) {
  history[replace ? "replaceState" : "pushState"]({}, "", to);
  update();
  if (!replace) window.scrollTo(0, 0);
}

// setQuery changes the query string (filters, page) of the current page.
export function setQuery(changes, { replace = false } = {}) {
  const p = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === "") p.delete(k);
    else p.set(k, String(v));
  }
  const s = p.toString();
  navigate(location.pathname + (s ? "?" + s : ""), { replace });
}

addEventListener("popstate", update);

// Same-origin links of the console move without a page load.
addEventListener("click", (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest?.("a[href]");
  if (!a || a.target || a.hasAttribute("download") || a.getAttribute("href").startsWith("#")) return;
  const u = new URL(a.href, location.href);
  if (u.origin !== location.origin || !match(u.pathname)) return;
  e.preventDefault();
  navigate(u.pathname + u.search);
});
