package platform

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform/openapi"
	"deckhand/platform/ratelimit"
	"deckhand/platform/reqpolicy"
)

// The types here refer to one another (a route holds its operation, an
// operation is served on a host, a host holds its routes), so they are
// declared together, below the files that build on them: the operations
// (op.go), a route's tool (tool.go), the document (openapi.go) and the
// host's making and serving (host.go).

// Route is one entry of a service's route table. The same table registers the
// handler and produces the OpenAPI document, so the two cannot drift.
//
// Path uses OpenAPI syntax: "/api/v1/things/{id}". A trailing "{name...}"
// matches the rest of the path (an input field tagged path:"name...", or
// c.Params("*")).
type Route struct {
	Method string
	Path   string
	// OperationID names the operation in the OpenAPI document (getInvoice);
	// generated clients name their methods after it. Empty: derived from
	// the method and path. Unique within a document.
	OperationID string
	Summary     string
	Description string
	Tags        []string
	// Policy says who may call the route (Public, SignedIn, Admin or a
	// Resource check); the host enforces it before the handler. The zero
	// value is SignedIn on a host with an Authenticator.
	Policy Policy
	// Limits are the route's rate limits; the host applies those keyed by
	// IP, account or credential, the domain those keyed ByValue.
	Limits []ratelimit.RateLimit
	Query  []Param
	// Body and Response are zero values of the request and response types;
	// their JSON shape goes into the document. Nil means none / free-form.
	Body     any
	Response any
	// Status is the success status (default 200).
	Status int
	// Statuses are further success statuses an Op's answer may pick (its
	// Status field), documented with the same body: 200 beside a Status of
	// 201 for a create-or-replace.
	Statuses []int
	// Message is the control plane's success envelope message ("Transfer
	// completed"); container services answer without an envelope.
	Message string
	// RequestType is the media type documented for a raw ([]byte or
	// io.Reader) request body (default application/octet-stream).
	RequestType string
	// ContentType of a non-JSON success response (image/png, text/plain ...).
	ContentType string
	// WebSocket marks an upgrade endpoint (documented with x-websocket).
	WebSocket bool
	// Headers are sent on every answer of the route, errors included
	// (Referrer-Policy on a URL that carries a one-time token, which an
	// error page would leak as well as a redirect).
	Headers map[string]string
	// Frameable marks a route whose answers are another program's own
	// pages (the tunnel's reverse proxy to an app): the host leaves
	// framing to that program instead of sending reqpolicy.NoFraming.
	Frameable bool
	// Exactly one of Op (a typed domain method, op.go), Handler (Fiber) or
	// HTTP (net/http, for hijacking, WebDAV and streaming) is set. With Op,
	// the parameters, body and answer are documented from its types, so
	// Query and Body stay empty (Response only describes a StreamOp's
	// stream).
	Op      Operation
	Handler fiber.Handler
	HTTP    http.Handler
	// Tool, when set, makes the route an MCP tool too (tool.go): its
	// name, its description for a model and its hints. Its schemas are
	// the Op's.
	Tool *Tool

	// bare: the JSON answer is not wrapped in the control plane's envelope
	// (the host's own /health).
	bare bool
}

// Params are the route's declared parameters: Query, or those of its Op's
// input type.
func (r Route) Params() []Param {
	if r.Op == nil {
		return r.Query
	}
	o := r.Op.operation()
	if o.in == nil {
		return nil
	}
	out := make([]Param, len(o.in.params))
	for i, p := range o.in.params {
		out[i] = p.p
	}
	return out
}

// JSONBody reports whether the route reads a JSON request body (Body, or
// its Op's input).
func (r Route) JSONBody() bool {
	if r.Op == nil {
		return r.Body != nil
	}
	in := r.Op.operation().in
	return in.hasBody() && !in.binary()
}

// Operation is a route's typed handler: a domain method the host calls
// with its bound input (bind.go) and whose answer it writes. Build one
// with Op, ReadOp, CommandOp or StreamOp and put it in Route.Op; the route
// entry keeps what is HTTP about it (method, path, success Status, the
// control plane's Message, policy, documentation):
//
//	{Method: http.MethodPost, Path: "/api/v1/wallet/transfer-to-ai", Policy: platform.SignedIn,
//		Summary: "Move money to AI credit", Message: "Transfer completed", Op: platform.Op(s.Transfer)}
//
//	func (s *Service) Transfer(ctx context.Context, in TransferInput) (*Receipt, error)
//
// The answer goes out as JSON: the value itself on a container service,
// inside {statusCode, message, data} on the control plane. An output with
// a field named Body (without a json tag) is a wrapper: Body is the
// answer, fields tagged header:"Name" are response headers (empty ones are
// not sent), an int field named Status, when not 0, replaces the route's
// Status (201 for a created resource, 200 for a replaced one: list the
// others in Route.Statuses), and on the control plane a string field named
// Message, when not empty, replaces the route's Message. A []byte answer
// (or Body) is sent as it is, with the route's ContentType. A Body of type
// io.Reader is streamed (a file, zero-copy with sendfile(2) when it is an
// *os.File on a TCP connection) and closed when it is an io.Closer; the
// wrapper's int64 header:"Content-Length" field, when it has one, is its
// size (-1: unknown). A body of unknown size goes out chunked, one chunk
// per Read, each flushed to the client: gather small writes (a bufio.Writer
// before a pipe) rather than hand over a reader that returns a few bytes
// at a time. A Body of type BodyWriter is called to
// write the answer as it is made (an archive of a walk, Server-Sent
// Events). A Content-Type header field overrides the route's ContentType.
// The document and the handler come from the same types, so they cannot
// disagree.
//
// A header field may be a []string: each value is its own header line
// (Set-Cookie, one cookie a line). A redirect is a wrapper with a
// Location header field and a Status of 302 or 303. An answer whose
// status is 204, 304 or a redirect (3xx) sends no body, whatever Body
// holds. An output that implements BodyHeaders adds headers computed from
// the bytes written (a signature over the body).
type Operation interface {
	operation() *operation
}

type operation struct {
	in     *inputPlan  // nil: no input
	out    *outputPlan // nil: no answer beyond the status (and message)
	stream bool        // a net/http handler writes the answer
	serve  func(h *Host, r Route) fiber.Handler
	// call runs the method with a tool's arguments (tool.go); nil for an
	// operation that writes its own answer.
	call func(ctx context.Context, r Route, args map[string]json.RawMessage) (any, error)
}

func (o *operation) operation() *operation { return o }

// Tool is a route's face as a Model Context Protocol tool: the name a
// model calls it by, a title and a description written for a model, and
// the hints MCP's tool annotations carry. The tool is the operation
// itself: its arguments are the route's input as one JSON object (its
// parameters by name beside its JSON body's members) and its structured
// answer is the route's answer, both with the schemas of the same typed
// structs the OpenAPI document shows (where the operation carries them
// as x-mcp-tool). The MCP service lists every service's tools from there
// and calls one with Host.CallTool when the service runs in its process
// (the binder's rules, in memory, nothing rebuilt as HTTP), else with the
// route over HTTP.
//
// Only an Op, ReadOp or CommandOp route can be a tool, with a JSON body or
// none and a JSON object for an answer, on a host with nothing to enforce
// per request (no Authenticator, no policy check, no rate limit): the MCP
// service judged the caller before the call.
type Tool struct {
	Name        string
	Title       string
	Description string
	// ReadOnly: the tool changes nothing. Destructive: it may destroy or
	// replace what is there (not only add). Idempotent: calling it twice
	// with the same arguments does nothing more. OpenWorld: it reaches
	// beyond the container's own state (a command may do anything).
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	// Args names parameters otherwise for a model (workspaceID:
	// workspace): parameter name to argument name. A parameter named "-"
	// is no argument of the tool (a header a model has no use for): it is
	// bound as not given.
	Args map[string]string
	// Text is how the answer reads for a model, the tool's text content:
	// a template over the answer's JSON (ToolText). Empty: the answer's
	// JSON itself. The MCP service trims it to its output budget.
	Text string
	// Budget: the tool takes max_chars, the characters of text it answers
	// at most (default: the MCP service's output budget), and the text is
	// cut to them with a marker saying so. An operation with a max_chars
	// parameter of its own is given the budget there.
	Budget bool
	// Pages names the answer's text member a model reads in pages: the
	// tool takes max_chars and offset (a character to start at, from a cut
	// answer's marker); the member is that window of itself, next_offset
	// and total_chars are set beside it, and Text reads the window.
	Pages string
	// Image names the answer's member holding an image (base64, of the
	// type the mime_type member names, else PNG): it is answered as image
	// content beside the text, and left out of the structured content.
	Image string
	// Failed is a template like Text over an answer that is no error of
	// the operation's but a failure for a model (a command that exited
	// non-zero): when it reads anything, the call is answered as the
	// tool's failure (isError), with Text as its text.
	Failed string
}

// operationArgs are the arguments of the operation in as t names them
// (its parameters but those that are none, its JSON body's members), and
// a parameter that is also a member, if one is.
func (t *Tool) operationArgs(in *inputPlan) (args map[string]bool, twice string) {
	args = map[string]bool{}
	if in == nil {
		return args, ""
	}
	if in.body != nil {
		members, _ := (*openapi.Builder)(nil).SchemaOf(in.body.typ)["properties"].(map[string]any)
		for name := range members {
			args[name] = true
		}
	}
	for _, p := range in.params {
		switch name := t.arg(p.p.Name); {
		case name == "-":
		case args[name] && twice == "":
			twice = p.p.Name
		default:
			args[name] = true
		}
	}
	return args, twice
}

// arg is the argument a parameter is in the tool's arguments.
func (t *Tool) arg(param string) string {
	if a, ok := t.Args[param]; ok {
		return a
	}
	return param
}

// ErrorStyle selects the error body a host writes.
type ErrorStyle int

const (
	// ContainerErrors writes {"code","details","message"} (container services).
	ContainerErrors ErrorStyle = iota
	// EnvelopeErrors writes {"statusCode","error","message"} (control plane).
	EnvelopeErrors
)

// HostConfig configures one HTTP host.
type HostConfig struct {
	Info  Info
	Style ErrorStyle
	// Logger takes the host's lines; the host adds "service" (Info.Name)
	// to each unless NamedLogger says the logger carries it already.
	Logger *slog.Logger
	// NamedLogger: Logger already carries "service" (a container service's
	// logger from its ServiceDeps), so no line holds the key twice.
	NamedLogger bool
	// BodyLimit in bytes (default 4 MiB); larger bodies get 413.
	BodyLimit int
	// HeaderTimeout bounds reading a request's line and header block
	// (default 10 s), the first request's from the connection's opening: a
	// client that trickles its headers (slowloris) is answered 408 and
	// closed, one that sent nothing is closed without an answer.
	// ReadTimeout then applies to the body.
	HeaderTimeout time.Duration
	ReadTimeout   time.Duration // default 60s
	WriteTimeout  time.Duration // default 0: downloads may be long
	IdleTimeout   time.Duration // default 120s
	// StreamRequestBody hands large bodies to handlers as a stream.
	StreamRequestBody bool
	// Middleware runs after the kernel's (request id, log, recovery) and
	// before any route.
	Middleware []fiber.Handler
	// Auth resolves credentials for routes whose Policy needs one. With it
	// set, a route without a policy needs a signed-in caller.
	Auth Authenticator
	// Limiter counts the routes' declared rate limits.
	Limiter ratelimit.Limiter
	// Finalize runs on every response, success or error, after its body is
	// complete: the control plane signs responses here.
	Finalize func(c fiber.Ctx)
	// HealthStatus reports a non-ok status ("unavailable", reason).
	HealthStatus func() (status, detail string)
	// ProxyHeader, when set (X-Forwarded-For), is trusted for ClientIP
	// under the rule of package clientip: only from a loopback, private or
	// link-local peer, only its right-most element over all its lines, and
	// only when that is a bare IP address; else the peer is the client.
	ProxyHeader string
	// Servers are the document's base URLs (default "/": where it was
	// read).
	Servers []Server
	// Policy checks Host, Origin and Sec-Fetch-Site before any route (see
	// RequestPolicy). A container service (ContainerErrors) without one
	// gets the default: --domain localhost, no extra origins, so no host
	// built for a container service is ever without it.
	Policy *reqpolicy.RequestPolicy
	// LocalTrust says who may call this host on its own port: a
	// connection it accepted from anyone but a trusted local user (see
	// LocalTrust) gets 401 before any route; a request the agent's
	// gateway dispatched in-process was judged there. A container service
	// without one trusts root and its own user, so none is ever open to
	// every local user.
	LocalTrust *reqpolicy.LocalTrust
}

// Host is one service's HTTP server: a Fiber app built from a route table
// plus the kernel's /health and /openapi.{json,yaml}.
type Host struct {
	cfg     HostConfig
	methods map[string]bool // the request methods the router knows
	log     *slog.Logger    // cfg.Logger with "service"
	app     *fiber.App
	routes  []Route
	tools   map[string]Route // by tool name
	docJSON []byte
	docYAML []byte
	docErr  error
	docOnce sync.Once
	lastUA  atomic.Pointer[string]
	boundIP atomic.Pointer[string]
}

// Info is the title block of a service's OpenAPI document.
type Info struct {
	Name        string // service identifier, e.g. "cron"
	Title       string
	Version     string
	Description string
}

// Server is one base URL of a document's servers list. A relative URL is
// relative to where the document was read.
type Server struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}
