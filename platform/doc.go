// Package platform is the shared kernel of deckhand: the one HTTP host every
// container service and the control plane run on, the typed domain errors and
// the single map from error codes to HTTP statuses, route tables that produce
// both the router and the OpenAPI document, request decoding and validation,
// the injectable clock, and the process health record. It also fixes what a
// container service is (service.go: ServiceDeps, typed Settings declared as
// flags, ContainerService with Info), where its data lives (data.go), how it
// is served (serve.go: NewServiceHost, ServeUntil), the request policy every
// container service's host and the gateway apply (requestpolicy.go: Host,
// Origin, Sec-Fetch-Site, built from CommonSettings), how query parameters are
// parsed (query.go), the seams between services (seams.go: Journal,
// Notifier), who may call a route and how often (policy.go: Policy,
// Authenticator; ratelimit.go: RateLimit, Limiter, StoreLimiter — declared
// per route, enforced by the host, shown in the OpenAPI document; the
// caller travels in the request's context.Context, package auth), the
// binder that turns a request into a route's typed input from its struct
// tags (bind.go) and the operations that make a domain method the handler
// (op.go: Op, ReadOp, CommandOp, StreamOp), the OpenAPI documents derived
// from the same types (openapi.go).
//
// Transport decision (made once, here): every service is a Fiber v3 app on
// fasthttp, because that is the fast path for plain JSON resources. Routes
// that need net/http semantics — WebSocket upgrades through gorilla/websocket,
// WebDAV through golang.org/x/net/webdav, streaming bodies — are declared with
// Route.HTTP and mounted through Fiber's adaptor; fasthttp's adaptor implements
// http.Hijacker and http.Flusher, so gorilla's Upgrader works unchanged. The
// agent's gateway is a fasthttp server too (FastRequest and WriteFastError
// give it the request policy and the error body).
//
// platform imports nothing else of ours.
package platform
