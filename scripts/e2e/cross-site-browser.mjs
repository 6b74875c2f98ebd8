// Browser test of the agent's request policy, driven by the Go test
// TestBrowserCrossSite (agent/e2e) or by hand:
//   node scripts/e2e/cross-site-browser.mjs http://127.0.0.1:9999/ http://127.0.0.1:7700
// It opens a page on another origin (the first URL) in headless Debian
// Chromium and, from that page, tries what issue 8 reproduced with curl:
// a "simple" cross-site POST (text/plain and form-encoded, no preflight) to
// create a shell through the gateway, and a WebSocket shell. It prints one
// line per attempt; the Go test checks no session was started.
import { launch } from "./chromium.mjs";

const [evil, target] = process.argv.slice(2);
if (!evil || !target) {
  console.error("usage: cross-site-browser.mjs EVIL_PAGE_URL GATEWAY_URL");
  process.exit(2);
}
const chrome = await launch();
let failed = false;
try {
  const page = await chrome.page();
  await page.goto(evil);
  const results = await page.evaluate(async (gw) => {
    const out = [];
    const create = gw + "/_/terminal/api/v1/terminal/create";
    for (const [ctype, body] of [["text/plain", '{"shell":"/bin/sh"}'], ["application/x-www-form-urlencoded", "a=b"]]) {
      try {
        await fetch(create, { method: "POST", mode: "no-cors", headers: { "Content-Type": ctype }, body });
        out.push("post " + ctype + " sent");
      } catch (e) {
        out.push("post " + ctype + " network error " + e.message);
      }
    }
    const ws = await new Promise((resolve) => {
      const s = new WebSocket(gw.replace(/^http/, "ws") + "/_/terminal/api/v1/terminal/ws");
      s.onopen = () => { s.close(); resolve("ws opened"); };
      s.onerror = () => resolve("ws refused");
    });
    out.push(ws);
    return out;
  }, target);
  for (const r of results) console.log(r);
} catch (e) {
  console.error("FAIL:", e.message);
  failed = true;
} finally {
  await chrome.close();
}
console.log(failed ? "cross-site test failed" : "cross-site test ran");
process.exit(failed ? 1 : 0);
