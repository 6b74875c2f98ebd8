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
