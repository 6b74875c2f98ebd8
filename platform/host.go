package platform

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"

	"deckhand/platform/auth"
	"deckhand/platform/clientip"
	"deckhand/platform/fault"
	"deckhand/platform/localtcp"
	"deckhand/platform/openapi"
	"deckhand/platform/ratelimit"
	"deckhand/platform/reqpolicy"
)

const (
	requestIDKey = "deckhand.request_id"
	clientIPKey  = "deckhand.client_ip"
)

// NewHost builds a host serving routes (from one or more tables).
func NewHost(cfg HostConfig, tables ...[]Route) *Host {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 4 << 20
	}
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, 60*time.Second)
	cfg.HeaderTimeout = cmp.Or(cfg.HeaderTimeout, DefaultHeaderTimeout)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, 120*time.Second)
	if cfg.Policy == nil && cfg.Style == ContainerErrors {
		cfg.Policy = reqpolicy.DefaultPolicy()
	}
	if cfg.LocalTrust == nil && cfg.Style == ContainerErrors {
		cfg.LocalTrust = reqpolicy.NewLocalTrust(nil)
	}
	methods := append(append([]string(nil), fiber.DefaultMethods...), WebDAVMethods...)
	h := &Host{cfg: cfg, log: cfg.Logger, methods: map[string]bool{}, tools: map[string]Route{}}
	for _, m := range methods {
		h.methods[m] = true
	}
	if !cfg.NamedLogger {
		h.log = cfg.Logger.With("service", cfg.Info.Name)
	}
	h.app = fiber.New(fiber.Config{
		AppName:   cfg.Info.Name,
		BodyLimit: cfg.BodyLimit,
		// The server's read deadline covers the request line and headers;
		// HeaderReceived below moves it to ReadTimeout for the body.
		ReadTimeout:       cfg.HeaderTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		StreamRequestBody: cfg.StreamRequestBody,
		// An answer that encodes itself (a listing of 100,000 entries) goes
		// out as it encodes: encoding/json would scan and compact it again.
		JSONEncoder: func(v any) ([]byte, error) {
			if m, ok := v.(json.Marshaler); ok {
				return m.MarshalJSON()
			}
			return json.Marshal(v)
		},
		// A streaming host's handlers read multipart bodies as streams;
		// pre-parsing would spool every part to /tmp first.
		DisablePreParseMultipartForm: cfg.StreamRequestBody,
		// MethodAny routes (WebDAV) take the WebDAV methods too.
		RequestMethods: methods,
		// Errors found before routing (a malformed request, a body over the
		// limit, a header timeout) are rendered and signed like the rest.
		ErrorHandler: func(c fiber.Ctx, err error) error {
			var fe *fiber.Error
			if errors.As(err, &fe) && fe.Code == http.StatusNotImplemented {
				// fasthttp refused a method that is not an HTTP token
				// (the request is gone by now; the kernel answers the
				// well-formed methods the router does not know).
				err = errMethodNotToken
			}
			h.writeError(c, err)
			h.finalize(c)
			return nil
		},
	})
	srv := h.app.Server()
	routedErr := srv.ErrorHandler
	srv.ErrorHandler = func(fctx *fasthttp.RequestCtx, err error) {
		if !reqpolicy.CloseIfNothingRead(fctx, err) {
			routedErr(fctx, err)
		}
	}
	srv.HeaderReceived = func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{ReadTimeout: cfg.ReadTimeout}
	}
	// Fiber answers a method it does not know with a bare 501 before any
	// middleware; the kernel answers it instead (logged, in the host's
	// error body, signed by Finalize).
	routed := srv.Handler
	srv.Handler = func(fctx *fasthttp.RequestCtx) {
		if h.methods[string(fctx.Method())] {
			routed(fctx)
			return
		}
		c := h.app.AcquireCtx(fctx)
		defer h.app.ReleaseCtx(c)
		_ = h.kernel(c)
	}
	if cfg.LocalTrust != nil {
		srv.ConnState = cfg.LocalTrust.ConnState
	}
	h.app.Use(h.kernel)
	for _, m := range cfg.Middleware {
		h.app.Use(m)
	}
	h.routes = append(h.routes, h.builtinRoutes()...)
	for _, t := range tables {
		h.routes = append(h.routes, t...)
	}
	for _, r := range h.routes {
		h.register(r)
	}
	return h
}

// buildDoc renders the OpenAPI document once, on first use: rendering a
// large route table costs tens of milliseconds that the agent's cold start
// (every service at once) should not pay before anyone asks for it.
func (h *Host) buildDoc() {
	h.docOnce.Do(func() {
		info := h.cfg.Info
		if h.cfg.Policy != nil {
			info.Description = strings.TrimSpace(info.Description + "\n\n" + reqpolicy.BrowserPolicyDoc)
		}
		doc, err := openAPI(docConfig{info: info, authed: h.cfg.Auth != nil, envelope: h.cfg.Style == EnvelopeErrors,
			servers: h.cfg.Servers}, h.routes)
		if err == nil {
			h.docJSON, h.docYAML, err = openapi.Marshal(doc)
		}
		h.docErr = err
		if err != nil {
			h.log.Error("openapi document cannot be built", "err", err)
		}
	})
}

func (h *Host) register(r Route) {
	checkParams(r)
	var handler fiber.Handler
	n := 0
	for _, set := range []bool{r.Op != nil, r.Handler != nil, r.HTTP != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		panic("platform: route " + r.Method + " " + r.Path + " needs exactly one of Op, Handler and HTTP")
	}
	switch {
	case r.Op != nil:
		checkOp(r)
		handler = r.Op.operation().serve(h, r)
	case r.Handler != nil:
		handler = r.Handler
	default:
		handler = h.httpHandler(r.HTTP)
	}
	if r.Tool != nil {
		h.checkTool(r)
	}
	handler = h.guard(r, withQuery(r, handler))
	if r.Frameable {
		inner := handler
		handler = func(c fiber.Ctx) error {
			c.Locals(frameableKey{}, true)
			return inner(c)
		}
	}
	if len(r.Headers) > 0 {
		inner := handler
		handler = func(c fiber.Ctx) error {
			for name, v := range r.Headers {
				c.Set(name, v)
			}
			return inner(c)
		}
	}
	path := fiberPath(r.Path)
	if r.Method == MethodAny {
		h.app.All(path, handler)
		return
	}
	h.app.Add([]string{r.Method}, path, handler)
}

// checkOp panics on a route whose Op and table entry disagree: parameters
// or a body declared beside the Op's types, or a path parameter no input
// field binds.
func checkOp(r Route) {
	o := r.Op.operation()
	where := "platform: route " + r.Method + " " + r.Path + ": "
	// An answer of more than one shape (a Body of interface type) names
	// its usual one in Response.
	anyBody := o.out != nil && o.out.bodyTyp != nil && o.out.bodyTyp.Kind() == reflect.Interface
	if len(r.Query) > 0 || r.Body != nil || (r.Response != nil && !o.stream && !anyBody) {
		panic(where + "an Op's parameters, body and answer come from its types; leave Query, Body and Response empty")
	}
	bound := map[string]bool{}
	if o.in != nil {
		for _, p := range o.in.params {
			if p.p.In == "path" {
				bound[strings.TrimSuffix(p.p.Name, "...")] = true
			}
		}
	}
	want := map[string]bool{}
	for _, name := range pathParams(r.Path) {
		want[name] = true
		if !bound[name] {
			panic(where + "no input field is tagged path:\"" + name + "\"")
		}
	}
	for name := range bound {
		if !want[name] {
			panic(where + "input field path:\"" + name + "\" is not in the path")
		}
	}
}

// guard wraps a route's handler with its policy and rate limits. On a host
// without an Authenticator only explicitly declared policies and limits
// apply (container services), and declaring a credentialed policy there is
// a programming error caught at start.
func (h *Host) guard(r Route, next fiber.Handler) fiber.Handler {
	pol := r.Policy
	if pol.Access == AccessDefault {
		pol.Access = AccessSignedIn
		if h.cfg.Auth == nil {
			pol.Access = AccessPublic
		}
	}
	if h.cfg.Auth == nil && pol.Access == AccessPublic && pol.Check == nil && len(r.Limits) == 0 {
		return next // container services: nothing to enforce, nothing to pay
	}
	if pol.Access != AccessPublic && h.cfg.Auth == nil {
		panic("platform: route " + r.Method + " " + r.Path + " declares policy " + pol.Label() + " on a host without an Authenticator")
	}
	var hostLimits []ratelimit.RateLimit
	for _, l := range r.Limits {
		if l.N <= 0 || l.By == ratelimit.ByValue {
			continue
		}
		if (l.By == ratelimit.ByAccount || l.By == ratelimit.ByCredential) && pol.Access == AccessPublic {
			panic("platform: route " + r.Method + " " + r.Path + " limits by " + l.By.String() + " but is public")
		}
		hostLimits = append(hostLimits, l)
	}
	if len(r.Limits) > 0 && h.cfg.Limiter == nil {
		panic("platform: route " + r.Method + " " + r.Path + " declares rate limits on a host without a Limiter")
	}
	return func(c fiber.Ctx) error {
		ip := ClientIP(c)
		ctx := auth.WithClientIP(c.Context(), ip)
		var p *auth.Principal
		if pol.Access != AccessPublic {
			var err error
			if p, err = h.cfg.Auth.Authenticate(c); err != nil {
				return err
			}
			if p == nil {
				return errNoCaller
			}
			if p.Kind == auth.KindAgent && !pol.Agents {
				return errAgentOnly
			}
			ctx = auth.NewContext(ctx, p)
			if pol.Access == AccessAdmin && !p.IsAdmin() {
				return errAdminOnly
			}
		}
		c.SetContext(ctx)
		c.RequestCtx().SetUserValue(callerCtxKey{}, ctx)
		if len(hostLimits) > 0 {
			hits := make([]ratelimit.LimitHit, 0, len(hostLimits))
			for _, l := range hostLimits {
				key := ip
				switch l.By {
				case ratelimit.ByAccount:
					key = p.UserID
				case ratelimit.ByCredential:
					key = p.CredentialID()
				}
				hits = append(hits, ratelimit.LimitHit{Limit: l, Key: key})
			}
			if err := h.cfg.Limiter.Allow(ctx, hits...); err != nil {
				return err
			}
		}
		if pol.Check != nil {
			if err := pol.Check(ctx, func(n string) string { return c.Params(n) }); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// checkParams panics on a route table whose declared parameters cannot work
// (an unknown type, a Default that breaks its own rules): a programming
// error that must surface when the host is built, not on a request.
func checkParams(r Route) {
	for _, p := range QueryParams(r.Query) {
		switch p.Type {
		case "", "string", "integer", "number", "boolean":
		default:
			panic("platform: " + r.Method + " " + r.Path + ": query parameter " + p.Name + " has unknown type " + p.Type)
		}
		if p.Range != nil && p.Type != "integer" && p.Type != "number" {
			panic("platform: " + r.Method + " " + r.Path + ": query parameter " + p.Name + " has a Range but is not numeric")
		}
		if p.Pattern != "" {
			if _, err := regexp.Compile(p.Pattern); err != nil {
				panic("platform: " + r.Method + " " + r.Path + ": query parameter " + p.Name + ": pattern: " + err.Error())
			}
		}
		if p.Default != "" {
			if _, err := parseParam(p, p.Default); err != nil {
				panic("platform: " + r.Method + " " + r.Path + ": default of " + err.Error())
			}
		}
	}
}

// withQuery wraps a route's handler so its declared query parameters are
// parsed and checked first. Routes without query parameters are untouched.
func withQuery(r Route, next fiber.Handler) fiber.Handler {
	params := QueryParams(r.Query)
	if len(params) == 0 {
		return next
	}
	return func(c fiber.Ctx) error {
		args := c.RequestCtx().QueryArgs()
		q, err := ParseQuery(params, func(name string) []string {
			raw := args.PeekMulti(name)
			out := make([]string, len(raw))
			for i, b := range raw {
				out[i] = string(b)
			}
			return out
		})
		if err != nil {
			return err
		}
		c.RequestCtx().SetUserValue(queryKey{}, q)
		return next(c)
	}
}

// App exposes the Fiber app (tests use App().Test).
func (h *Host) App() *fiber.App { return h.app }

// Routes is the full route table, built-ins included.
func (h *Host) Routes() []Route { return h.routes }

// OpenAPIJSON is the served document (or why it could not be built).
func (h *Host) OpenAPIJSON() ([]byte, error) {
	h.buildDoc()
	return h.docJSON, h.docErr
}

// Serve answers on ln until Shutdown.
func (h *Host) Serve(ln net.Listener) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		h.boundIP.Store(new(tcp.IP.String()))
	}
	err := h.app.Listener(localtcp.Listener(ln), fiber.ListenConfig{DisableStartupMessage: true})
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, lets in-flight requests finish until ctx ends.
func (h *Host) Shutdown(ctx context.Context) error { return h.app.ShutdownWithContext(ctx) }

// frameableKey marks, in a request's locals, a Frameable route's answer.
type frameableKey struct{}

// kernel is the outermost middleware: request id, panic recovery, error
// rendering, access log and Finalize, in one frame so every response —
// including 404s for unknown routes — passes through all of them.
func (h *Host) kernel(c fiber.Ctx) (err error) {
	start := time.Now()
	rid := c.Get(fiber.HeaderXRequestID)
	if rid == "" || len(rid) > 128 {
		rid = newRequestID()
	}
	c.Locals(requestIDKey, rid)
	c.Locals(clientIPKey, h.clientIP(c))
	c.Set(fiber.HeaderXRequestID, rid)
	if ua := c.Get(fiber.HeaderUserAgent); ua != "" {
		if cur := h.lastUA.Load(); cur == nil || *cur != ua {
			ua = string([]byte(ua)) // fasthttp reuses the header buffer
			h.lastUA.Store(&ua)
		}
	}
	var cors reqpolicy.CORS // set once the policy let the request in
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("panic in handler", "request_id", rid, "panic", p, "path", c.Path())
			h.writeError(c, fault.Internal("handle the request", errors.New("panic")))
		}
		if !c.RequestCtx().Hijacked() {
			cors.Apply(&c.Response().Header) // errors too: the page reads why
			if c.Locals(frameableKey{}) == nil {
				// No page of a service or of the console may be framed.
				reqpolicy.NoFraming(&c.Response().Header)
			}
		}
		h.finalize(c)
		h.log.Info("request",
			"request_id", rid, "method", string(c.Request().Header.Method()), "path", c.Path(),
			"status", c.Response().StatusCode(), "duration_ms", float64(time.Since(start).Microseconds())/1000,
			"ip", ClientIP(c), "bytes", bodyLen(c))
		err = nil
	}()
	rc := c.RequestCtx()
	dispatched := reqpolicy.GatewayDispatched(rc)
	rc.SetUserValue(viaGatewayKey{}, viaGateway{dispatched: dispatched, trust: h.cfg.LocalTrust, conn: rc.Conn()})
	if t := h.cfg.LocalTrust; t != nil && !dispatched && t.Tracked(rc.Conn()) && !t.Trusted(rc.Conn()) {
		h.writeError(c, errUntrustedPeer)
		return nil
	}
	// A request the agent's gateway dispatched in-process passed the same
	// policy there, judged on the client's own connection: one decision,
	// not a second one on facts its rewrite changed.
	if h.cfg.Policy != nil && !dispatched {
		d, e := h.cfg.Policy.Decide(reqpolicy.FiberRequest(c))
		if e != nil {
			h.writeError(c, e) // no CORS headers: the origin was refused
			return nil
		}
		if d.Preflight {
			// Before routing and auth: a preflight carries no credentials.
			d.WritePreflight(c.Response())
			return nil
		}
		cors = d
	}
	// Fiber's c.Method() panics on a method it does not know: read the header.
	if m := c.Request().Header.Method(); !h.methods[string(m)] {
		h.writeError(c, methodError(m))
		return nil
	}
	if e := c.Next(); e != nil {
		h.writeError(c, e)
	}
	return nil
}

// DefaultHeaderTimeout is how long a host waits for a request's line and
// headers unless HostConfig.HeaderTimeout says otherwise.
const DefaultHeaderTimeout = 10 * time.Second

// methodError is the answer to a request method the router does not know:
// 501 NOT_IMPLEMENTED for a well-formed token (RFC 9110 15.6.2: the server
// does not recognize the method), 400 when it is not a token at all
// (RFC 9110 9.1: tchar only; a control byte, a space or a non-ASCII byte).
func methodError(method []byte) *fault.Error {
	for _, b := range method {
		if !httpguts.IsTokenRune(rune(b)) {
			return errMethodNotToken
		}
	}
	shown := string(method)
	if len(shown) > 32 {
		shown = shown[:32] + "..."
	}
	return &fault.Error{Code: fault.CodeNotImplemented, Field: "method", Details: "method",
		Message: fmt.Sprintf("method %q is not implemented by this server", shown)}
}

var errMethodNotToken = &fault.Error{Code: fault.CodeBadRequest, Field: "method", Details: "method",
	Message: "method: must be an HTTP token (RFC 9110 9.1: letters, digits and !#$%&'*+-.^_`|~ only)"}

// errUntrustedPeer refuses a caller on a service's own port that is not
// a trusted local user: the gateway is its door.
var errUntrustedPeer = &fault.Error{Code: fault.CodeUnauthorized, Details: "peer",
	Message: "this port serves the agent's gateway and trusted local users only (root, the agent's user, --trusted-uids): call the service through the gateway with a credential"}

// bodyLen is the response size for the access log. A streamed body's
// length is not known yet, and Response().Body() would drain the stream
// into memory, so it reports the Content-Length header (-1 when chunked).
func bodyLen(c fiber.Ctx) int {
	if c.Response().IsBodyStream() {
		return c.Response().Header.ContentLength()
	}
	return len(c.Response().Body())
}

func (h *Host) finalize(c fiber.Ctx) {
	if h.cfg.Finalize != nil {
		h.cfg.Finalize(c)
	}
}

// RequestIDOf is RequestID for a domain method: the context an Operation
// is called with carries the id.
func RequestIDOf(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey).(string)
	return s
}

// RequestID returns the id the kernel gave this request.
func RequestID(c fiber.Ctx) string {
	s, _ := c.Locals(requestIDKey).(string)
	return s
}

// ClientIP is the caller's address: the socket peer, or with a trusted
// ProxyHeader the address the proxy saw. Use it instead of c.IP().
func ClientIP(c fiber.Ctx) string {
	if s, ok := c.Locals(clientIPKey).(string); ok && s != "" {
		return s
	}
	return c.IP()
}

func (h *Host) clientIP(c fiber.Ctx) string {
	peer := c.RequestCtx().RemoteIP()
	if h.cfg.ProxyHeader == "" {
		return peer.String()
	}
	// Every header line, in order: a proxy that appends a line of its own
	// must not leave the client's line to be read as the first.
	ip := clientip.Resolve(clientip.FromIP(peer), c.Request().Header.PeekAll(h.cfg.ProxyHeader))
	if !ip.IsValid() {
		return peer.String()
	}
	return ip.String()
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeError renders err in the host's style; internal causes go to the log
// only, with the request id, so clients never see Go error strings.
func (h *Host) writeError(c fiber.Ctx, err error) {
	e := fromFiber(err)
	if e.Code == fault.CodeInternal || e.Code == fault.CodeBackend {
		h.log.Error("request failed", "request_id", RequestID(c),
			"path", c.Path(), "code", e.Code, "err", err)
	} else if e.Code == fault.CodeUnavailable && e.Cause != nil {
		h.log.Warn("request refused: database unavailable",
			"request_id", RequestID(c), "path", c.Path(), "err", err)
	}
	for k, v := range e.Headers {
		c.Set(k, v)
	}
	for _, line := range e.SetCookies {
		c.Response().Header.Add(fiber.HeaderSetCookie, line)
	}
	status := e.Status()
	if fe := (*fiber.Error)(nil); errors.As(err, &fe) && fe.Code == http.StatusRequestTimeout {
		// The client was slow, not a service behind this one: 408, as
		// the gateway answers, not TIMEOUT's 504.
		status = http.StatusRequestTimeout
	}
	c.Status(status)
	if h.cfg.Style == EnvelopeErrors {
		_ = c.JSON(fault.ErrorEnvelope{StatusCode: status, Error: envelopeError(e.Code, status), Message: e.Message})
		return
	}
	_ = c.JSON(fault.ContainerError{Code: e.Code, Details: e.Details, Message: e.Message})
}

// fromFiber maps Fiber's own errors (unknown route, body too large ...) to codes.
func fromFiber(err error) *fault.Error {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			return &fault.Error{Code: fault.CodeNotFound, Message: "no such route", Details: "route"}
		case http.StatusMethodNotAllowed:
			return &fault.Error{Code: fault.CodeMethodNotAllowed, Message: "method not allowed on this route"}
		case http.StatusRequestEntityTooLarge:
			return &fault.Error{Code: fault.CodePayloadTooLarge, Message: "request body exceeds the size limit"}
		case http.StatusRequestTimeout:
			return &fault.Error{Code: fault.CodeTimeout, Message: "request timed out"}
		case http.StatusUnsupportedMediaType:
			return &fault.Error{Code: fault.CodeUnsupportedMedia, Message: "unsupported media type"}
		case http.StatusRequestHeaderFieldsTooLarge:
			return &fault.Error{Code: fault.CodeBadRequest, Message: "request headers too large"}
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return &fault.Error{Code: fault.CodeBadRequest, Message: "bad request"}
		}
	}
	return fault.AsError(err)
}

// genericCodes are shown in the envelope's `error` as the status text; any
// other code is a domain code and is shown as itself (TRANSFER_FEE_CHANGED).
var genericCodes = map[string]bool{
	fault.CodeBadRequest: true, fault.CodeInvalid: true, fault.CodeUnauthorized: true, fault.CodeForbidden: true,
	fault.CodeNotFound: true, fault.CodeMethodNotAllowed: true, fault.CodeConflict: true, fault.CodeGone: true,
	fault.CodePreconditionFailed: true, fault.CodePreconditionRequired: true, fault.CodePayloadTooLarge: true,
	fault.CodeUnsupportedMedia: true, fault.CodeTooManyRequests: true, fault.CodeInternal: true, fault.CodeBackend: true,
	fault.CodeUnavailable: true, fault.CodeTimeout: true, fault.CodeNotImplemented: true,
}

func envelopeError(code string, status int) string {
	if genericCodes[code] {
		return http.StatusText(status)
	}
	return code
}

func (h *Host) builtinRoutes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/health", OperationID: "getHealth", Summary: "Health record of this service", Policy: Public,
			Response: Health{}, Tags: []string{"meta"}, Handler: h.health, bare: true},
		{Method: http.MethodGet, Path: "/openapi.json", OperationID: "getOpenAPIJSON", Summary: "This service's OpenAPI document (JSON)", Policy: Public,
			ContentType: "application/json", Tags: []string{"meta"}, Handler: h.openapiDoc("application/json", &h.docJSON)},
		{Method: http.MethodGet, Path: "/openapi.yaml", OperationID: "getOpenAPIYAML", Summary: "This service's OpenAPI document (YAML)", Policy: Public,
			ContentType: "application/yaml", Tags: []string{"meta"}, Handler: h.openapiDoc("application/yaml", &h.docYAML)},
	}
}

func (h *Host) health(c fiber.Ctx) error {
	rec := Health{
		PID:     pid,
		Service: h.cfg.Info.Name,
		Started: processStart.Format(time.RFC3339Nano),
		Status:  "ok",
		FDs:     CountFDs(),
		Memory:  ReadMemory(),
		IP:      "127.0.0.1",
	}
	if ip := h.boundIP.Load(); ip != nil {
		rec.IP = *ip
	}
	if BuildTime != "" {
		rec.Built = new(BuildTime)
	}
	if ua := h.lastUA.Load(); ua != nil {
		rec.UserAgent = ua
	}
	if h.cfg.HealthStatus != nil {
		rec.Status, rec.Detail = h.cfg.HealthStatus()
	}
	return c.JSON(rec)
}

var errOpenAPI = &fault.Error{Code: fault.CodeBackend, Message: "Internal server error", Details: "openapi document unavailable"}

// openapiDoc serves the document in the form doc points at, once built.
func (h *Host) openapiDoc(contentType string, doc *[]byte) fiber.Handler {
	return func(c fiber.Ctx) error {
		if h.buildDoc(); h.docErr != nil {
			return errOpenAPI
		}
		c.Set(fiber.HeaderContentType, contentType)
		return c.Send(*doc)
	}
}

// ServeUntil serves h on ln until ctx ends, then stops accepting and lets
// requests in flight finish for at most grace. It returns nil after a stop
// asked for through ctx, and the host's error when it stops by itself (the
// listener failed); a panic escaping the server is returned as an error so
// a supervisor can restart the service. ln is closed on return.
func ServeUntil(ctx context.Context, h *Host, ln net.Listener, grace time.Duration) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- h.Serve(ln)
	}()
	select {
	case err := <-done:
		_ = ln.Close()
		if err == nil {
			err = fmt.Errorf("stopped serving")
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := h.Shutdown(sctx); err != nil {
		h.log.Warn("shutdown", "err", err)
	}
	_ = ln.Close()
	<-done
	return nil
}
