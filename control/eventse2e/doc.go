// Package eventse2e holds the end-to-end tests of the event log and the
// notifications: they run the real deckhand-control binary on the
// embedded store and on PostgreSQL (controltest) and drive it over HTTP.
package eventse2e
