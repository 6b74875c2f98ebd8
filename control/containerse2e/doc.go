// Package containerse2e holds the end-to-end tests of containers that
// run: the real deckhand-control binary (on the embedded store, then on
// PostgreSQL) drives the real Docker engine, and the container's agent is
// the real deckhand binary in a busybox image the tests import. They check
// what the engine holds with its own client, by label.
package containerse2e
