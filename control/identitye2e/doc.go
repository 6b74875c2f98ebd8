// Package identitye2e holds the end-to-end tests of the identity domain:
// they build the real deckhand-control binary, start it on a loopback port
// with a temp --data directory, and drive it over HTTP only (mail is read
// from the .eml files it writes, TOTP codes come from oathtool, OAuth
// goes through a provider stand-in the tests start).
package identitye2e
