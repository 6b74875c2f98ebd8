// Package projectse2e holds the end-to-end tests of the projects domain
// (projects, permissions, containers, container network, proxy
// permissions): they start the real deckhand-control binary on the embedded
// store and again on PostgreSQL and drive it over HTTP only; the event log
// is read from the store once the server has stopped.
package projectse2e
