// Package platform is the host every container service and the control
// plane run on: one Fiber host per service and its kernel (request ids, the
// request policy's decision, rate limits, error bodies, the access line),
// route tables that produce both the router and the OpenAPI document, the
// binder that turns a request into a route's typed input from its struct
// tags, the operations that make a domain method the handler (Op, ReadOp,
// CommandOp, StreamOp, ConnOp), who may call a route (Policy,
// Authenticator; the caller travels in the request's context.Context,
// package auth), the query grammar, serving until a context ends, and the
// process health record.
//
// Its files form layers, each using only files listed before it:
//   - query.go (Param, Range, Query and the query grammar), policy.go
//     (Policy, Authenticator, Caller), route.go (MethodAny, the path
//     syntax), health.go (the health record), decode.go, tooltext.go and
//     the other small files with no reference to the rest.
//   - bind.go: the binder. output.go: an operation's output type, planned.
//   - types.go: Route, Operation, Tool, Host and HostConfig, which refer to
//     one another.
//   - conn.go: mounting a net/http route (the socket, the caller). tool.go:
//     checking and calling a route's tool (Host.CallTool). servicecall.go:
//     calling another process's services.
//   - op.go: Op, ReadOp, CommandOp, StreamOp, ConnOp and writing their
//     answers.
//   - openapi.go: the document, a route's tool (x-mcp-tool) included.
//   - host.go: NewHost, the kernel, registering and guarding each route,
//     the built-in routes, ServeUntil.
//
// The concerns around the host are packages of their own, each importing
// less than the one before it:
//   - platform/fault: typed domain errors, their stable codes, the one map
//     from a code to an HTTP status, and the error bodies. It imports
//     nothing of ours; the store's errors say what they are through methods.
//   - platform/clock: the injectable clock.
//   - platform/ratelimit: limits declared per route and counted in memory
//     or in the store, shared by replicas.
//   - platform/reqpolicy: the request policy every container service and
//     the gateway apply (Host, Origin, Sec-Fetch-Site), CORS, and which
//     local users count as loopback.
//   - platform/contract: what a container service is (ServiceDeps, typed
//     Settings declared as flags, ContainerService), where its data lives,
//     how its host is built, the seams between services (Journal,
//     Notifier) and the programs proxy permissions judge.
//   - platform/mcptool: the route table's face as MCP tools (read from a
//     service's OpenAPI document, a call's budget and page, the answer as a
//     model reads it), which the MCP service lists and calls.
//   - platform/proc, platform/atomicfile, platform/timeloop: running
//     programs as another user in their own process group, replacing a file
//     whole, and the loop of time-driven work, each written once.
//
// Transport decision (made once, here): every service is a Fiber v3 app on
// fasthttp, because that is the fast path for plain JSON resources. Routes
// that need net/http semantics — WebSocket upgrades through gorilla/websocket,
// WebDAV through golang.org/x/net/webdav, streaming bodies — are declared with
// Route.HTTP and mounted through Fiber's adaptor; fasthttp's adaptor implements
// http.Hijacker and http.Flusher, so gorilla's Upgrader works unchanged. The
// agent's gateway is a fasthttp server too (reqpolicy.FastRequest and
// reqpolicy.WriteFastError give it the request policy and the error body).
package platform
