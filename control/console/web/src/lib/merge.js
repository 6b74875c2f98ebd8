// Three-way merge of proxy-permission documents, for the editor's
// conflict view: base is the version the editor loaded, mine the edited
// copy, theirs the newer version the server has. Each group, each group's
// rules and the two switches merge on their own: a side that left one
// unchanged takes the other side's; where both changed it differently the
// merge keeps mine and names it a conflict.
export function canon(v) {
  if (Array.isArray(v)) return "[" + v.map(canon).join(",") + "]";
  if (v && typeof v === "object") return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canon(v[k])).join(",") + "}";
  return JSON.stringify(v);
}
const eq = (a, b) => canon(a) === canon(b);

function pick(b, m, t, name, conflicts) {
  if (eq(m, b)) return t;
  if (eq(t, b) || eq(t, m)) return m;
  conflicts.push(name);
  return m;
}

export function merge3(base, mine, theirs) {
  const conflicts = [];
  const out = { ...theirs };
  for (const f of ["default", "enable_proxy"]) out[f] = pick(base?.[f], mine[f], theirs[f], f, conflicts);
  for (const f of ["groups", "permissions"]) {
    const B = base?.[f] || {}, M = mine[f] || {}, T = theirs[f] || {};
    const res = {};
    for (const k of new Set([...Object.keys(B), ...Object.keys(M), ...Object.keys(T)])) {
      const v = pick(B[k], M[k], T[k], `${f}.${k}`, conflicts);
      if (v !== undefined) res[k] = v;
    }
    out[f] = res;
  }
  return { merged: out, conflicts };
}

// parseAccess reads a rule's access as typed: true, false, *, a port,
// ports separated by commas, or a range from-to.
export function parseAccess(s) {
  s = String(s).trim();
  if (s === "true" || s === "false") return s === "true";
  if (s === "*") return "*";
  if (/^\d+$/.test(s)) return Number(s);
  if (/^\d+(\s*,\s*\d+)+$/.test(s)) return s.split(",").map((x) => Number(x.trim()));
  return s;
}

export function showAccess(a) {
  return Array.isArray(a) ? a.join(", ") : String(a);
}
