// Browser test of the display's takeover view, driven by the Go test
// TestTakeoverInChromium (display/x11) or by hand:
//   node scripts/e2e/vnc-browser.mjs http://127.0.0.1:7704/api/v1/display/vnc/ http://127.0.0.1:9999/
// It opens the takeover page (noVNC) in headless Debian Chromium and waits
// for the desktop on its canvas, then follows commands on stdin, one a line:
//   SNAP path   write the canvas as PNG to path, then print "SNAPPED"
//   TYPE text   type text (and Enter) into the desktop, then print "TYPED"
//   EVIL        open the second URL (another origin) and, from there, try
//               to read the takeover page and open its WebSocket; print
//               one line per attempt
//   QUIT
import { createInterface } from "node:readline";
import { writeFileSync } from "node:fs";
import { launch } from "./chromium.mjs";

const [url, evil] = process.argv.slice(2);
if (!url) {
  console.error("usage: vnc-browser.mjs TAKEOVER_URL [EVIL_PAGE_URL]");
  process.exit(2);
}
const chrome = await launch({ viewport: { width: 1280, height: 800 } });
let failed = false;
try {
  const page = await chrome.page();
  page.on("pageerror", (e) => { console.error("page error:", e.message); failed = true; });
  await page.goto(url);
  await page.waitForFunction(() => document.documentElement.classList.contains("noVNC_connected"), null, { timeout: 30000 });
  // the first frame has arrived once the canvas is not all black
  await page.waitForFunction(() => {
    const c = document.querySelector("#noVNC_container canvas");
    if (!c || !c.width) return false;
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let lit = 0;
    for (let i = 0; i < d.length; i += 4 * 101) if (d[i] | d[i + 1] | d[i + 2]) lit++;
    return lit > 100;
  }, null, { timeout: 30000 });
  console.log("READY");
  for await (const line of createInterface({ input: process.stdin })) {
    const [cmd, ...rest] = line.split(" ");
    const arg = rest.join(" ");
    if (cmd === "SNAP") {
      const data = await page.evaluate(() => document.querySelector("#noVNC_container canvas").toDataURL("image/png"));
      writeFileSync(arg, Buffer.from(data.split(",")[1], "base64"));
      console.log("SNAPPED");
    } else if (cmd === "TYPE") {
      await page.evaluate(() => document.querySelector("#noVNC_container canvas").focus());
      await page.keyboard.type(arg, { delay: 20 });
      await page.keyboard.press("Enter");
      console.log("TYPED");
    } else if (cmd === "EVIL") {
      await page.goto(evil);
      const results = await page.evaluate(async (target) => {
        const out = [];
        try {
          const r = await fetch(target);
          out.push("fetch read " + r.status);
        } catch (e) {
          out.push("fetch blocked");
        }
        out.push(await new Promise((resolve) => {
          const ws = new WebSocket(target.replace(/^http/, "ws") + "websockify?mode=control", ["binary"]);
          ws.onopen = () => { ws.close(); resolve("ws opened"); };
          ws.onerror = () => resolve("ws refused");
        }));
        return out;
      }, url.split("?")[0]);
      for (const r of results) console.log(r);
      console.log("EVIL DONE");
    } else if (cmd === "QUIT") {
      break;
    }
  }
} catch (e) {
  console.error("FAIL:", e.message);
  failed = true;
} finally {
  await chrome.close();
}
process.exit(failed ? 1 : 0);
