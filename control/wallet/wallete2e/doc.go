// Package wallete2e holds the wallet's end-to-end tests: they start the
// real deckhand-control binary (controltest: every test on the embedded
// store and again on PostgreSQL) and drive the wallet over HTTP only; PDFs
// are read back with pdftotext (poppler-utils), the ledger is checked with
// `deckhand-control wallet verify`.
package wallete2e
