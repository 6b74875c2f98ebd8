// Package clients holds the client gate (gate_test.go): every OpenAPI
// document deckhand serves — the control plane's and each container
// service's — must generate a Go client with oapi-codegen (pinned in
// tools/go.mod) that compiles and decodes a live answer into its typed
// struct, must generate TypeScript types with openapi-typescript (pinned in
// clients/ts/package-lock.json) that tsc accepts, and the answers the gate
// reads must validate against the schemas of the document that describes
// them. The package has no code of its own; the documents come from the
// route tables (platform.Route, platform.Op).
package clients
