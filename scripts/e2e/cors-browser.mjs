// Browser test of CORS under the agent's request policy, driven by the Go
// test TestBrowserCORS (agent/e2e) or by hand:
//   node scripts/e2e/cors-browser.mjs ALLOWED_PAGE DENIED_PAGE URL...
// From a page on each of the two origins (the first listed in
// --allowed-origins, the second not), it sends each URL (a JSON POST
// route: cron's validate) a fetch() that needs a preflight (JSON body,
// Authorization header, credentials included) and tries to read the answer:
// a good schedule's body, an exposed header, and a bad schedule's error
// body. It prints one line per attempt:
//   <allowed|denied> <url> read <status> <body> request-id=<yes|no>
//   <allowed|denied> <url> error <status> <code>
//   <allowed|denied> <url> rejected <message>
import { launch } from "./chromium.mjs";

const [allowed, denied, ...targets] = process.argv.slice(2);
if (!allowed || !denied || targets.length === 0) {
  console.error("usage: cors-browser.mjs ALLOWED_PAGE DENIED_PAGE URL...");
  process.exit(2);
}
const chrome = await launch();
let failed = false;
try {
  const page = await chrome.page();
  for (const [label, origin] of [["allowed", allowed], ["denied", denied]]) {
    await page.goto(origin);
    const lines = await page.evaluate(async (targets) => {
      const out = [];
      const post = (url, body) => fetch(url, {
        method: "POST", mode: "cors", credentials: "include",
        headers: { "Content-Type": "application/json", "Authorization": "Bearer browser-test" },
        body: JSON.stringify(body),
      });
      for (const url of targets) {
        try {
          const r = await post(url, { schedule: "@daily", count: 2 });
          const body = (await r.text()).replace(/\s+/g, " ").slice(0, 300);
          out.push(`${url} read ${r.status} ${body} request-id=${r.headers.get("X-Request-Id") ? "yes" : "no"}`);
          const e = await post(url, { schedule: "not a schedule" });
          const j = await e.json();
          out.push(`${url} error ${e.status} ${j.code}`);
        } catch (e) {
          out.push(`${url} rejected ${e.message}`);
        }
      }
      return out;
    }, targets);
    for (const l of lines) console.log(label + " " + l);
  }
} catch (e) {
  console.error("FAIL:", e.message);
  failed = true;
} finally {
  await chrome.close();
}
console.log(failed ? "cors test failed" : "cors test ran");
process.exit(failed ? 1 : 0);
