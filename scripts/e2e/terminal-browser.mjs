// Browser test of the terminal service's web page, driven by the Go test
// TestBrowser (services/terminal) or by hand:
//   node scripts/e2e/terminal-browser.mjs http://127.0.0.1:7700/_/terminal/
// It opens the page in headless Debian Chromium, types a command, and reads
// the answer back from the terminal as rendered on the page. With --steps it
// also proves the page reconnects by itself: it prints "DROP?" and waits for
// a line on stdin (the Go test cuts every connection meanwhile), then types
// again. With --reload it checks the page keeps its session instead: a
// reload (and the bare URL in the same tab) reattaches with the replay, the
// marker typed before is on the screen again, the sessions list counts the
// page (1 attached), "New terminal" starts another shell, and once the page
// is closed the service counts 0 attached. The favicon loads and no request
// of the page fails. With DECKHAND_TOKEN set (an access token), the page
// sends it as the deckhand_token cookie of URL's host, as a browser behind
// the platform proxy does. Exit status 0 means every check passed.
import { createInterface } from "node:readline";
import { launch } from "./chromium.mjs";

const url = process.argv[2];
const steps = process.argv.includes("--steps");
const reloading = process.argv.includes("--reload");
if (!url) {
  console.error("usage: terminal-browser.mjs URL [--steps]");
  process.exit(2);
}
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));

function check(cond, why) {
  if (!cond) throw new Error(why);
}

// sessions is the service's list, read from here (not through the page).
async function sessions() {
  const r = await fetch(new URL("api/v1/terminal/sessions", url));
  check(r.ok, `sessions list: ${r.status}`);
  return r.json();
}

// until polls f (which answers a value or null) until it answers a value.
async function until(what, f, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const shown = (page, marker) => page.waitForFunction((m) => [...document.querySelectorAll(".xterm-rows > div")]
  .some((row) => row.textContent.trim() === m), marker, { timeout: 20000 });
const connectedTo = (page) => page.waitForFunction(() => {
  const m = /^connected · (\S+)$/.exec(document.querySelector("#status")?.textContent || "");
  return m && m[1];
}, null, { timeout: 20000 }).then((h) => h.jsonValue());

async function reload(page) {
  const failed = [];
  let favicon = 0;
  page.on("response", (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    if (/favicon/.test(r.url()) && r.ok()) favicon++;
  });
  await page.goto(url);
  const id = await connectedTo(page);
  await page.locator(".xterm-helper-textarea").focus();
  await page.keyboard.type("echo reload-$((6*7))-marker");
  await page.keyboard.press("Enter");
  await shown(page, "reload-42-marker");
  // The page's own list says the truth once the socket is open.
  await page.getByRole("link", { name: new RegExp(id) }).getByText("1 attached").waitFor({ timeout: 20000 });
  await until("1 client on the API", async () => (await sessions()).find((s) => s.id === id && s.clients === 1));
  console.log("attached 1 before the reload");

  await page.reload();
  check(await connectedTo(page) === id, "the reload opened another session");
  await shown(page, "reload-42-marker");
  await until("1 client after the reload", async () => (await sessions()).find((s) => s.id === id && s.clients === 1));
  check((await sessions()).length === 1, "the reload started another shell");
  console.log("reload kept session", id, "and its screen");

  // The tab remembers its session without the fragment too.
  await page.goto(url.split("#")[0]);
  check(await connectedTo(page) === id, "the bare URL in the same tab opened another session");
  await shown(page, "reload-42-marker");
  console.log("bare URL reattached");

  await page.getByRole("button", { name: "New terminal" }).click();
  await page.waitForFunction((old) => {
    const m = /^connected · (\S+)$/.exec(document.querySelector("#status")?.textContent || "");
    return m && m[1] !== old;
  }, id, { timeout: 20000 });
  const fresh = await connectedTo(page);
  const list = await until("two sessions", async () => { const l = await sessions(); return l.length === 2 && l; });
  check(list.find((s) => s.id === id)?.running, "the first shell ended when a new one started");
  await page.reload();
  check(await connectedTo(page) === fresh, "a reload after New terminal went back to the old session");
  console.log("new terminal", fresh);
  check(favicon > 0, "the favicon did not load");
  check(failed.length === 0, "failed requests: " + failed.join(", "));

  await page.close();
  await until("0 attached after the page closed", async () => (await sessions()).every((s) => s.clients === 0));
  console.log("attached 0 after the page closed");
}

const chrome = await launch({ viewport: { width: 1000, height: 600 } });
if (process.env.DECKHAND_TOKEN) {
  await chrome.browser.addCookies([{ name: "deckhand_token", value: process.env.DECKHAND_TOKEN, url, httpOnly: true, sameSite: "Lax" }]);
}
let failed = false;
try {
  const page = await chrome.page();
  page.on("pageerror", (e) => { console.error("page error:", e.message); failed = true; });
  if (reloading) await reload(page);
  else await steady(page);
} catch (e) {
  console.error("FAIL:", e.message);
  failed = true;
} finally {
  await chrome.close();
  lines.close();
}
console.log(failed ? "browser test failed" : "browser test passed");
process.exit(failed ? 1 : 0);

async function steady(page) {
  await page.goto(url);
  console.log("page loaded");
  await page.waitForFunction(() => document.querySelector("#status")?.textContent.startsWith("connected"), null, { timeout: 20000 });
  console.log("connected");

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
}
