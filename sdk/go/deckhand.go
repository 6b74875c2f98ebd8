// Package deckhand is the Go SDK of deckhand: a Client for the control
// plane (accounts, tokens, wallet, invoices) that verifies the
// X-Service-Signature of every answer before it reads it, and a Container
// for one container's agent gateway (processes, files, terminals). The
// typed clients generated from each OpenAPI document live in the api/
// packages; Client.API and Container's service accessors hand them out
// wired to the same transport, so every route of every document is
// reachable, and the hand-written methods here cover the common tasks.
package deckhand

// APIVersion is the version of the deckhand API this SDK targets (every
// path begins with /api/v1).
const APIVersion = "v1"
