// First load of the web console in headless Chromium: bytes over the wire
// (compressed bodies plus headers, from the DevTools protocol) and the time
// from navigation to an interactive login form (the app mounted, its
// session check answered, the form's button enabled). Each run uses a
// fresh profile, so the cache is cold.
//   node scripts/e2e/console-bench.mjs URL [runs=10]
import { launch } from "./chromium.mjs";

const [url, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 10);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const bytes = [];
const tti = [];
const domInteractive = [];
for (let i = 0; i < runs; i++) {
  const chrome = await launch();
  const page = await chrome.page();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  let total = 0;
  cdp.on("Network.loadingFinished", (e) => { total += e.encodedDataLength; });
  const t0 = Date.now();
  await page.goto(url + "/login");
  await page.getByRole("button", { name: "Log in", exact: true }).waitFor();
  await page.waitForFunction(() => !document.querySelector("button[type=submit]").disabled);
  tti.push(Date.now() - t0);
  domInteractive.push(await page.evaluate(() => performance.getEntriesByType("navigation")[0].domInteractive));
  await page.waitForLoadState("networkidle");
  bytes.push(total);
  await chrome.close();
}
console.log(`runs ${runs}: first load ${median(bytes)} bytes over the wire (median), ` +
  `interactive login form ${median(tti)} ms (median; min ${Math.min(...tti)}, max ${Math.max(...tti)}), ` +
  `domInteractive ${median(domInteractive).toFixed(0)} ms`);
