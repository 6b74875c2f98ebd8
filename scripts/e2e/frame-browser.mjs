// Browser test of the agent's anti-framing, driven by the Go test
// TestBrowserRefusesFraming (agent/e2e) or by hand:
//   node scripts/e2e/frame-browser.mjs http://localhost:9999/ http://127.0.0.1:7700/_/terminal/
// It opens a page of another site (the first URL, which must frame the
// second in an <iframe>) in headless Debian Chromium, waits, and prints
// the frame's URL and what it shows: a page the agent refused to have
// framed is Chromium's error page, never the web terminal.
import { launch } from "./chromium.mjs";

const [evil, target] = process.argv.slice(2);
if (!evil || !target) {
  console.error("usage: frame-browser.mjs EVIL_PAGE_URL FRAMED_URL");
  process.exit(2);
}
const chrome = await launch();
let failed = false;
try {
  const page = await chrome.page();
  const statuses = [];
  page.on("response", (r) => { if (r.url().startsWith(target)) statuses.push(r.status()); });
  await page.goto(evil + "?src=" + encodeURIComponent(target));
  await page.waitForTimeout(3000);
  const frames = page.frames().filter((f) => f !== page.mainFrame());
  console.log("frames " + frames.length);
  console.log("framed status " + statuses.join(","));
  for (const f of frames) {
    console.log("frame url " + f.url());
    let text = "";
    try { text = await f.evaluate(() => document.title + " | " + (document.body ? document.body.innerText : "")); } catch (e) { text = "unreadable: " + e.message; }
    console.log("frame shows " + text.replace(/\s+/g, " ").slice(0, 300));
  }
} catch (e) {
  console.error("FAIL:", e.message);
  failed = true;
} finally {
  await chrome.close();
}
console.log(failed ? "frame test failed" : "frame test ran");
process.exit(failed ? 1 : 0);
