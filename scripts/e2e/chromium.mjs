// Shared by the browser tests: headless Debian Chromium (or $CHROMIUM)
// through playwright-core, in a fresh profile directory (playwright passes
// it as --user-data-dir) that close() removes.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function launch(options = {}) {
  const profile = mkdtempSync(join(tmpdir(), "deckhand-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    ...options,
  });
  return {
    browser,
    page: async () => browser.pages()[0] || await browser.newPage(),
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
