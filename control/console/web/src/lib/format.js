// Display helpers shared by the pages.
export function when(ts) {
  if (!ts) return "—";
  const d = new Date(ts);
  return isNaN(d) ? String(ts) : d.toLocaleString();
}

export function money(v, currency = "USD") {
  if (v === undefined || v === null || v === "") return "—";
  return `${v} ${currency}`;
}

// cents reads a decimal string (up to 2 decimals) as integer cents, or null.
export function cents(s) {
  const m = /^(\d{1,15})(?:\.(\d{1,2}))?$/.exec(String(s).trim());
  if (!m) return null;
  return Number(m[1]) * 100 + Number((m[2] || "0").padEnd(2, "0"));
}

export function fromCents(c) {
  const neg = c < 0;
  c = Math.abs(c);
  return (neg ? "-" : "") + Math.floor(c / 100) + "." + String(c % 100).padStart(2, "0");
}

// fee is amount × bps / 10000 rounded half up to the cent (the wallet's rule).
export function fee(amountCents, bps) {
  return Math.floor((amountCents * bps + 5000) / 10000);
}

export function errorText(e) {
  return e?.message || String(e);
}

// size shows a byte count in binary units.
export function size(n) {
  if (n === undefined || n === null || isNaN(n)) return "—";
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

// nextStep is an API error's message with what the user can do about
// it: the server's message names the field (as "field: rule") or the
// state, the console adds the way forward by the answer's status.
export function nextStep(e) {
  const msg = errorText(e).replace(/[.\s]+$/, "");
  const field = /^([a-z_][a-z0-9_.[\]]*): /.exec(msg)?.[1];
  if (field && (e?.status === 400 || e?.status === 409)) return `${msg}. Change ${field} and try again.`;
  switch (e?.status) {
    case 400: return `${msg}. Correct the form and try again.`;
    case 401: return `${msg}. Log in again and retry.`;
    case 403: return `${msg}. Your role on this project does not allow it: ask the project's owner or a manager.`;
    case 404: return `${msg}. It may have been deleted meanwhile: reload the page.`;
    case 409: return `${msg}. Reload the page to see the current state, then retry.`;
    case 502:
    case 503:
    case 504: return `${msg}. The container engine or the agent did not answer: retry in a minute; if it persists, ask the operator to check the engine.`;
    default: return msg;
  }
}
