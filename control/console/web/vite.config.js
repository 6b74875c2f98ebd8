// The console's build: Svelte compiled by Vite into ../dist, which
// deckhand-control embeds (go:embed). No inline script or style is
// emitted, so the pages run under the server's strict CSP.
import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";

export default defineConfig({
  plugins: [svelte()],
  build: {
    outDir: "../dist",
    // dist/.gitkeep is committed (go:embed needs the folder); make build
    // clears the rest before building.
    emptyOutDir: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022",
    reportCompressedSize: false,
  },
});
