// Package replicae2e drives several `deckhand-control serve --database-url`
// replicas on one PostgreSQL database: they share nothing but it (sessions,
// tickets, one-time codes, rate-limit counters, signing keys), survive
// SIGKILL with every account whole or absent, and answer 503 while the
// database is gone. Tests only.
package replicae2e
