package platform

import (
	"net/http"
	"strings"

	"deckhand/platform/ratelimit"

	"github.com/gofiber/fiber/v3"
)

// MethodAny registers a route for every method (WebDAV uses PROPFIND, LOCK,
// ...). The OpenAPI document lists it under the standard methods and names
// the others in x-methods.
const MethodAny = "ANY"

// WebDAVMethods are the methods beyond HTTP's that every host accepts, so
// a MethodAny route serves WebDAV (RFC 4918). A route may also name one of
// them as its Method (one typed operation per WebDAV method); OpenAPI 3.0
// has no field for them, so the document lists those operations by method
// under the path's x-additional-operations (OpenAPI 3.2's
// additionalOperations, as an extension).
var WebDAVMethods = []string{"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK"}

// Param documents a query, path or header parameter.
type Param struct {
	Name        string
	In          string // "query" (default), "path", "header", "cookie"
	Description string
	Required    bool
	Type        string // "string" (default), "integer", "number", "boolean"
	Enum        []string
	// Range bounds an integer or number (query.go has the grammar).
	Range *Range
	// Default is the value an absent parameter takes, in query syntax.
	Default string
	// MinLength, MaxLength (characters; 0: no bound) and Pattern (an RE2
	// expression the whole value must match) restrict a string.
	MinLength, MaxLength int
	Pattern              string
	// Format is the OpenAPI format shown for the value (uuid, date-time ...).
	Format string
}

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

// fiberPath turns "/a/{id}/b/{rest...}" into "/a/:id/b/*".
func fiberPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '{' {
			b.WriteByte(p[i])
			continue
		}
		end := strings.IndexByte(p[i:], '}')
		if end < 0 {
			b.WriteString(p[i:])
			break
		}
		name := p[i+1 : i+end]
		if strings.HasSuffix(name, "...") {
			b.WriteByte('*')
		} else {
			b.WriteByte(':')
			b.WriteString(name)
		}
		i += end
	}
	return b.String()
}

// openapiPath turns "/a/{rest...}" into "/a/{rest}".
func openapiPath(p string) string { return strings.ReplaceAll(p, "...}", "}") }

// pathParams lists the {names} in a path.
func pathParams(p string) []string {
	var out []string
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSuffix(p[i+1:i+j], "..."))
		p = p[i+j+1:]
	}
}
