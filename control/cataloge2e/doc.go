// Package cataloge2e holds the end-to-end tests of the images and servers
// domains: every test starts the real deckhand-control binary (on the
// embedded store, then again on PostgreSQL) and drives it over HTTP only.
// Purchases and priced rentals fund the buyer through the wallet's admin
// credit route (POST /api/v1/admin/wallet/credit).
package cataloge2e
