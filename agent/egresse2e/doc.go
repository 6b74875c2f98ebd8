// Package egresse2e drives the container network end to end, on Linux as
// root: the real deckhand-control, the real deckhand agent inside a
// network namespace made by the test, real proxies (dante) and a target
// host in namespaces of their own. The configuration is written through
// the control-plane API only; the tests check where packets went.
package egresse2e
