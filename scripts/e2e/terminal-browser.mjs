// Browser test of the terminal service's web page, driven by the Go test
// TestBrowser (services/terminal) or by hand:
//   node scripts/e2e/terminal-browser.mjs http://127.0.0.1:7700/_/terminal/
// It opens the page in headless Debian Chromium, types a command, and reads
// the answer back from the terminal as rendered on the page. With --steps it
// also proves the page reconnects by itself: it prints "DROP?" and waits for
// a line on stdin (the Go test cuts every connection meanwhile), then types
// again. Exit status 0 means every check passed.
import { createInterface } from "node:readline";
import { launch } from "./chromium.mjs";

const url = process.argv[2];
const steps = process.argv.includes("--steps");
if (!url) {
  console.error("usage: terminal-browser.mjs URL [--steps]");
  process.exit(2);
}
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));

const chrome = await launch({ viewport: { width: 1000, height: 600 } });
let failed = false;
try {
  const page = await chrome.page();
  page.on("pageerror", (e) => { console.error("page error:", e.message); failed = true; });
  await page.goto(url);
  await page.waitForFunction(() => document.querySelector("#status")?.textContent.startsWith("connected"), null, { timeout: 20000 });

  // The answer line is exactly the marker; the typed command line also holds "echo".
  const typeAndRead = async (marker) => {
    await page.locator(".xterm-helper-textarea").focus();
    await page.keyboard.type(`echo ${marker}`);
    await page.keyboard.press("Enter");
    await page.waitForFunction((m) => [...document.querySelectorAll(".xterm-rows > div")]
      .some((row) => row.textContent.trim() === m), marker, { timeout: 20000 });
    console.log("read back", marker);
  };
  await typeAndRead("hi-from-browser");

  // The terminal follows the window: a larger viewport gives the session more columns.
  const colsBefore = await page.evaluate(() => window.__term.cols);
  await page.setViewportSize({ width: 1400, height: 700 });
  await page.waitForFunction((c) => window.__term.cols > c, colsBefore, { timeout: 10000 });
  const cols = await page.evaluate(() => window.__term.cols);
  const base = new URL(".", page.url()).href;
  await page.waitForFunction(async ([b, c]) => {
    const list = await (await fetch(b + "api/v1/terminal/sessions")).json();
    return list.some((s) => s.cols === c);
  }, [base, cols], { timeout: 10000 });
  console.log("resized to", cols, "columns");

  if (steps) {
    console.log("DROP?");
    await nextLine();
    await page.waitForFunction(() => !document.querySelector("#status").textContent.startsWith("connected"), null, { timeout: 20000 });
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("connected"), null, { timeout: 20000 });
    await typeAndRead("back-after-drop");
  }
} catch (e) {
  console.error("FAIL:", e.message);
  failed = true;
} finally {
  await chrome.close();
  lines.close();
}
console.log(failed ? "browser test failed" : "browser test passed");
process.exit(failed ? 1 : 0);
