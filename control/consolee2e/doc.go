// Package consolee2e tests the web console of deckhand-control end to
// end: the real binary (on both store engines, see controltest), its
// pages and cookie session over HTTP, and the console itself in Debian's
// Chromium driven by playwright-core (scripts/e2e/console-browser.mjs).
package consolee2e
