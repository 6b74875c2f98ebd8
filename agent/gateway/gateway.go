// Package gateway owns the agent's front door: one address (--listen) in front
// of every container service. It routes by Host
// (`<project_id>-<container_id>-<service>-<instance>.<server_name>.<domain>`)
// and, for local use, by path (`/_/<service>/...`, prefix stripped and passed
// on as X-Forwarded-Prefix; a GET of `/_/<service>` itself redirects to
// `/_/<service>/` so relative links in a service's pages resolve), applies
// the request policy (reqpolicy.RequestPolicy: Host 421, Origin 403, CORS
// preflights answered here, CORS headers on every answer to an origin of
// --allowed-origins) and then the proxy permissions decision (Authorizer)
// before anything reaches a service, and answers the agent's own status on a loopback-only path.
// Errors are the container error body {"code","details","message"}: 404
// NOT_FOUND for an unknown or stopped service, 403 FORBIDDEN when the
// Authorizer refuses, 502 BACKEND_ERROR when the service does not answer.
// The gateway owns X-Forwarded-{For,Host,Proto,Prefix}: a client's copies
// never reach a service, and Connection cannot make an end-to-end header
// (Origin, Cookie ...) hop-by-hop.
//
// Why fasthttp: the gateway is in front of every request from the platform,
// and it was the slowest hop. Measured side by side with nginx
// (scripts/bench/gateway.sh, figures in BENCHMARKS.md), the earlier net/http
// server with httputil.ReverseProxy did a quarter to a third of nginx's
// requests per second and spent about five times nginx's CPU per proxied
// request (about 95 us against 20 us). Its profile was spread over the
// net/http server (a goroutine, header map and context per request) as
// much as the Transport, so a tuned Transport (option a) could fix only the
// smaller half; it was not built. A fasthttp server with one
// fasthttp.HostClient per service (pooled keep-alive connections, reused
// request and response objects, the request target passed on verbatim
// without URL parsing) spends 1.0-1.25 times nginx's CPU per request, does
// about 0.7 of nginx's requests per second at 32 connections (3.5 times the
// old gateway) and more than nginx at one; what it does per request is
// mostly fasthttp and four loopback syscalls, as in nginx.
// The services already run on fasthttp (Fiber), so nothing new comes in.
//
// Direct dispatch (dispatch.go): a service the agent runs in its own
// process (not --isolate) is not proxied at all. With the request past the
// gateway's policy and Authorizer and rewritten exactly as for the proxy
// (path, Host = the service's address, the gateway's X-Forwarded-*), the
// gateway calls the service's Fiber handler with the client's own
// *fasthttp.RequestCtx: no loopback connection, no second parse. That
// second hop was the remaining gap to nginx (0.70 of its req/s at 32
// connections); without it the gateway passes nginx (BENCHMARKS.md). The
// service's Host trusts the gateway's decision: reqpolicy.MarkGatewayDispatch
// marks the request (nothing a client sends can set that mark), and the
// Host judges neither the peer nor Host and Origin a second time on facts
// the rewrite changed (a client addressing the agent by IP would otherwise
// be refused 421 there). On a proxied connection the Host checks the
// gateway's X-Forwarded-Host again, taking any address of the machine for
// an IP literal (the gateway took it as the address the client connected
// to). One fact changes by design: the
// connection's peer is the client, so platform.ClientIP is the gateway's
// view of the client (the X-Forwarded-For it sets) with or without
// --trust-proxy-headers, where a proxied service without the flag sees the
// gateway, 127.0.0.1. The service's own port, and its policy there, are
// untouched. What the service's own server would refuse before its handler
// (a header block over its read buffer, a body over its BodyLimit or
// chunked for a service that reads bodies whole) goes through the proxy,
// so that server applies its own limits; a body a handler leaves unread is
// read away (up to 256 MiB in 5 s) or the connection closes, so leftover bytes are
// never parsed as a request. A stopped service has no handler, and the
// proxy answers 502; a restarted one is called through its new
// host. Upgrades (WebSocket) to an in-process service go the same way:
// the service's handler answers the handshake and hijacks the client's own
// connection, so its frames reach the client's socket with no loopback
// connection and no splice between (a follower of a process's output costs
// what it costs on the service's own port). The gateway wraps each
// connection it accepts (conn.go) to see such a connection close: it is a
// tunnel (Tunnels, closed by Shutdown and Close) from the handshake until
// fasthttp closes it after the service's session; the wrapper passes the
// socket's descriptor through (SyscallConn) only for a plain socket, so a
// service's raw writes reach it and a TLS connection gets the portable
// path. An upgrade the proxy would take anyway (a header block over the
// service's buffer) and every upgrade to an isolated service, or on a
// connection the gateway did not accept itself (Handler on another
// server), keep the splice in upgrade.go.
//
// What ReverseProxy gave for free is kept by hand, here and tested: bodies
// stream both ways without buffering (StreamRequestBody on the server,
// StreamResponseBody on the clients, chunked responses such as server-sent
// events written out chunk by chunk, never a multipart form spooled);
// WebSocket and other Upgrade requests to a proxied service pass through
// by hijacking the client connection on the service's 101 and splicing it
// to a connection of its own to the service (upgrade.go); hop-by-hop headers are dropped
// (proxy.go); the Authorizer sees request facts, not an HTTP stack
// (authorize.go).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"deckhand/platform/connlimit"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// StatusPath is where the gateway answers the agent's status (loopback only).
const StatusPath = "/_agent/status"

// ClaimPath is where a program in the container gets the container's
// claim for another container's gateway (loopback only):
// GET /_agent/claim?aud=<container id>.
const ClaimPath = "/_agent/claim"

// Config wires the gateway to the agent.
type Config struct {
	// Domain is {container_domain} of Host routing (--domain).
	Domain string
	// ProjectID and ContainerID, when set, must match the Host's prefix.
	ProjectID, ContainerID string
	// Known is every service name Host routing recognises.
	Known []string
	// Backend gives the address of a running service.
	Backend func(service string) (addr string, ok bool)
	// InProcess, when set, gives the service's handler while it runs in
	// this process and serves (nil otherwise: the request is proxied to
	// Backend's address). See dispatch.go.
	InProcess func(service string) *InProcess
	// Status answers StatusPath.
	Status http.Handler
	// Claim answers ClaimPath (nil: 404, the agent has no control plane).
	Claim http.Handler
	// Authorizer decides who may pass; default LoopbackOnly.
	Authorizer Authorizer
	// Policy is the request policy (Host, Origin, Sec-Fetch-Site) checked
	// before anything else; default: Domain and no extra origins.
	Policy *reqpolicy.RequestPolicy
	// TrustProxyHeaders (--trust-proxy-headers): the gateway sits behind
	// the platform proxy, so the client is the right-most X-Forwarded-For
	// hop when the peer is a loopback or private address. Either way the
	// services get one X-Forwarded-For: the client as the gateway sees it.
	TrustProxyHeaders bool
	// LocalTrust tells trusted local users' connections from other local
	// users' (default: root and the agent's own user). Only the former
	// count as loopback clients.
	LocalTrust *reqpolicy.LocalTrust
	Logger     *slog.Logger
	// MaxConns caps the client connections open at once (0: a quarter
	// of the process's descriptor limit, at least 64); one above it is
	// closed as soon as it is accepted.
	MaxConns int
}

// Target is where a request is going.
type Target struct {
	Service  string
	Instance int
	ByHost   bool
	// Path is the path the service sees (escaped form).
	Path string
}

// Timeouts of the client side. Reading a request's header must finish in
// headerTimeout (slowloris); bodies, long polls, streams and WebSockets
// have no deadline (they may rightly stay open for hours).
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 120 * time.Second
	// maxHeaderBytes bounds a request's or response's header block.
	maxHeaderBytes = 64 << 10
)

// Gateway is the agent's front door.
type Gateway struct {
	cfg    Config
	known  []string // longest first, so "notifications" wins over a shorter suffix
	srv    *fasthttp.Server
	status fasthttp.RequestHandler
	claim  fasthttp.RequestHandler

	mu      sync.Mutex
	clients map[string]*fasthttp.HostClient // by service address
	// tunnels: upgraded client connections, each with the gateway's
	// connection to the service when spliced (nil: the service, in this
	// process, took over the client's connection itself).
	tunnels map[net.Conn]net.Conn
	lns     []net.Listener
	conns   map[net.Conn]struct{} // open client connections, for Close
	closed  bool

	limit connlimit.Limit
	warns connlimit.Every
}

// warnEvery logs msg at most every 10 s: a flood is one line, not one a
// connection.
func (g *Gateway) warnEvery(msg string, args ...any) {
	if g.warns.Allow(time.Now()) {
		g.cfg.Logger.Warn(msg, args...)
	}
}

// New builds the gateway.
func New(cfg Config) *Gateway {
	if cfg.Authorizer == nil {
		cfg.Authorizer = LoopbackOnly{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LocalTrust == nil {
		cfg.LocalTrust = reqpolicy.NewLocalTrust(nil)
	}
	if cfg.Policy == nil {
		p, err := reqpolicy.NewRequestPolicy(cfg.Domain, nil)
		if err != nil {
			panic("gateway: " + err.Error()) // no origins: cannot fail
		}
		cfg.Policy = p
	}
	g := &Gateway{cfg: cfg, known: append([]string(nil), cfg.Known...),
		clients: map[string]*fasthttp.HostClient{}, tunnels: map[net.Conn]net.Conn{},
		conns: map[net.Conn]struct{}{}}
	sort.Slice(g.known, func(i, j int) bool { return len(g.known[i]) > len(g.known[j]) })
	g.limit.Total = cfg.MaxConns
	if g.limit.Total <= 0 {
		g.limit.Total = connlimit.Share(4, 1, 64)
	}
	if cfg.Status != nil {
		g.status = fasthttpadaptor.NewFastHTTPHandler(cfg.Status)
	}
	if cfg.Claim != nil {
		g.claim = fasthttpadaptor.NewFastHTTPHandler(cfg.Claim)
	}
	g.srv = &fasthttp.Server{
		Handler:                      g.handle,
		Name:                         "",
		NoDefaultServerHeader:        true,
		NoDefaultDate:                true,
		NoDefaultContentType:         true,
		StreamRequestBody:            true, // uploads go through as they arrive
		DisablePreParseMultipartForm: true, // never spool a form to disk
		ReadTimeout:                  headerTimeout,
		IdleTimeout:                  idleTimeout,
		ReadBufferSize:               maxHeaderBytes,
		CloseOnShutdown:              true,
		ConnState:                    g.connState,
		Logger:                       fastLogger{cfg.Logger},
		// A request that does not parse is logged without its bytes
		// (credentials, cookies) and answered with the error body.
		SecureErrorLogMessage: true,
		ErrorHandler:          parseError,
	}
	return g
}

// Serve accepts connections on ln until Shutdown.
func (g *Gateway) Serve(ln net.Listener) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		_ = ln.Close()
		return http.ErrServerClosed
	}
	g.lns = append(g.lns, ln)
	g.mu.Unlock()
	err := g.srv.Serve(clientListener{Listener: ln, g: g})
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return http.ErrServerClosed
	}
	return err
}

// Shutdown stops accepting, lets requests in flight finish until ctx ends,
// and closes every WebSocket it passed through.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	for _, ln := range g.lns {
		_ = ln.Close() // before fasthttp knows of it, Serve may not have started
	}
	for c, up := range g.tunnels {
		if up != nil {
			_ = up.Close()
		}
		if cc, ok := c.(*clientConn); ok {
			// The socket itself: clientConn.Close would take g.mu. The
			// service's session ends on the error, and fasthttp's Close
			// then untracks it.
			_ = cc.Conn.Close()
		} else {
			_ = c.Close()
		}
	}
	g.mu.Unlock()
	err := g.srv.ShutdownWithContext(ctx)
	g.mu.Lock()
	for _, hc := range g.clients {
		hc.CloseIdleConnections()
	}
	g.mu.Unlock()
	return err
}

// Close stops at once: the listener and every connection, requests and
// streams in flight and WebSockets included.
func (g *Gateway) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = g.Shutdown(ctx)
	// Closed outside g.mu: closing a connection whose WebSocket handshake
	// is in flight (a tunnel, not yet hijacked) untracks it, which takes
	// g.mu.
	g.mu.Lock()
	conns := make([]net.Conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return nil
}

// connState keeps the set of open client connections (a hijacked one is
// a tunnel from then on).
func (g *Gateway) connState(c net.Conn, st fasthttp.ConnState) {
	g.cfg.LocalTrust.ConnState(c, st)
	switch st {
	case fasthttp.StateNew:
		g.mu.Lock()
		g.conns[c] = struct{}{}
		g.mu.Unlock()
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}
}

// Handler is the gateway's request handler, for serving it on a
// fasthttp.Server of one's own (Serve uses it) and for tests.
func (g *Gateway) Handler() fasthttp.RequestHandler { return g.handle }

// handle applies the request policy, answers a CORS preflight itself
// (before routing and the Authorizer: a preflight carries no credentials)
// and routes the rest; every answer to an allowed foreign origin, the
// gateway's own errors included, gets the policy's CORS headers.
func (g *Gateway) handle(ctx *fasthttp.RequestCtx) {
	cors, perr := g.cfg.Policy.Decide(reqpolicy.FastRequest(ctx))
	if perr != nil {
		reqpolicy.WriteFastError(ctx, 0, perr)
		return
	}
	if cors.Preflight {
		cors.WritePreflight(&ctx.Response)
		return
	}
	g.route(ctx)
	if !ctx.Hijacked() {
		// A service's Host sets the same headers; Apply replaces them.
		cors.Apply(&ctx.Response.Header)
	}
}

// route sends a request the policy let in to its service.
func (g *Gateway) route(ctx *fasthttp.RequestCtx) {
	path, query := splitRequestURI(ctx.Request.Header.RequestURI())
	switch path {
	case StatusPath:
		g.serveLocal(ctx, g.status, "status")
		return
	case ClaimPath:
		g.serveLocal(ctx, g.claim, "claim")
		return
	}
	host := string(ctx.Request.Header.Host())
	t, perr := g.Resolve(host, path)
	if perr != nil {
		reqpolicy.WriteFastError(ctx, 0, perr)
		return
	}
	addr, ok := g.cfg.Backend(t.Service)
	if !ok {
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeNotFound, Message: "service " + t.Service + " is not running on this agent", Details: t.Service})
		return
	}
	id, ok := g.authorize(ctx, host, path, t)
	if !ok {
		return
	}
	query = withoutParams(query, id.Credentials)
	prefix := ""
	if !t.ByHost {
		prefix = "/_/" + t.Service
		// A page at /_/<service> would resolve its relative links against
		// /_/; send browsers to the directory form, as file servers do.
		if (ctx.IsGet() || ctx.IsHead()) && path == prefix {
			redirect(ctx, prefix+"/", query)
			return
		}
	}
	// Rewriting drops Connection; the client's wish to close is kept.
	clientClose := ctx.Request.Header.ConnectionClose() || !ctx.Request.Header.IsHTTP11()
	upgrade := isUpgrade(&ctx.Request.Header)
	var direct *InProcess
	if g.cfg.InProcess != nil {
		if d := g.cfg.InProcess(t.Service); d != nil && d.takes(ctx) && (!upgrade || ownConn(ctx) != nil) {
			direct = d
		}
	}
	g.rewrite(ctx, addr, t.Path, query, prefix)
	switch {
	case upgrade && direct != nil:
		g.upgradeDirect(ctx, direct, t.Service)
	case upgrade:
		g.upgrade(ctx, addr, t.Service)
	case direct != nil:
		g.dispatch(ctx, direct, t.Service, clientClose)
	case ctx.Request.IsBodyStream() && ctx.Request.Header.ContentLength() != 0:
		g.forwardStreamed(ctx, addr, t.Service)
	default:
		g.forward(ctx, addr, t.Service, clientClose)
	}
}

// serveLocal answers the agent's own routes (status, claim): loopback
// clients of trusted local users only, GET and HEAD.
func (g *Gateway) serveLocal(ctx *fasthttp.RequestCtx, h fasthttp.RequestHandler, what string) {
	local := ctx.RemoteIP().IsLoopback() && g.cfg.LocalTrust.Trusted(ctx.Conn())
	if local && g.cfg.TrustProxyHeaders {
		// A loopback peer relaying an outside client (the platform
		// proxy) does not make that client local.
		client := net.ParseIP(forwardedClient(ctx.RemoteIP(), ctx.Request.Header.PeekAll("X-Forwarded-For")))
		local = client != nil && client.IsLoopback()
	}
	if !local {
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeForbidden,
			Message: "the agent " + what + " is served to loopback clients of trusted local users only", Details: what})
		return
	}
	if !ctx.IsGet() && !ctx.IsHead() {
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeMethodNotAllowed, Message: "method not allowed on this route", Details: what})
		return
	}
	if h == nil {
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeNotFound, Message: "this gateway has no " + what, Details: what})
		return
	}
	h(ctx)
}

// redirect answers 308 to the directory form, as http.Redirect does.
func redirect(ctx *fasthttp.RequestCtx, to, query string) {
	if query != "" {
		to += "?" + query
	}
	ctx.Response.Header.Set("Location", to)
	ctx.SetStatusCode(http.StatusPermanentRedirect)
	if ctx.IsGet() {
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetBodyString("<a href=\"" + htmlEscaper.Replace(to) + "\">Permanent Redirect</a>.\n")
	}
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// splitRequestURI splits the request target as the client sent it into the
// escaped path and the raw query. An absolute-form target
// (http://host/path) yields its path.
func splitRequestURI(uri []byte) (path, query string) {
	s := string(uri)
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	s, query, _ = strings.Cut(s, "?")
	if !strings.HasPrefix(s, "/") {
		if _, rest, ok := strings.Cut(s, "://"); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				s = rest[i:]
			} else {
				s = "/"
			}
		}
	}
	return s, query
}

// Resolve finds the service a request is for: by Host when the Host has the
// container form, else by the /_/<service>/ prefix of the escaped path.
func (g *Gateway) Resolve(host, path string) (Target, *fault.Error) {
	if hr, ok := ParseHost(host, g.cfg.Domain, g.known); ok {
		if !g.ownsPrefix(hr.Prefix) {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "host",
				Message: "host " + hostOnly(host) + " names another container; this agent serves " + g.identity()}
		}
		if hr.Instance != 1 {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "instance",
				Message: "instance " + strconv.Itoa(hr.Instance) + " of service " + hr.Service + " does not exist (1 is the only instance)"}
		}
		return Target{Service: hr.Service, Instance: hr.Instance, ByHost: true, Path: path}, nil
	}
	if rest, ok := strings.CutPrefix(path, "/_/"); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if name == "" {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "service", Message: "no service named after /_/"}
		}
		if !g.isKnown(name) {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "service",
				Message: "unknown service " + strconv.Quote(name) + " (services: " + strings.Join(g.cfg.Known, ", ") + ")"}
		}
		return Target{Service: name, Instance: 1, Path: "/" + sub}, nil
	}
	return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "route",
		Message: "no service named in the request: use the path /_/<service>/... or the Host <project_id>-<container_id>-<service>-1.<server_name>." + g.cfg.Domain}
}

func (g *Gateway) isKnown(name string) bool {
	for _, k := range g.known {
		if k == name {
			return true
		}
	}
	return false
}

func (g *Gateway) ownsPrefix(prefix string) bool {
	p, c := strings.ToLower(g.cfg.ProjectID), strings.ToLower(g.cfg.ContainerID)
	switch {
	case p != "" && c != "":
		return prefix == p+"-"+c
	case p != "":
		return strings.HasPrefix(prefix, p+"-")
	case c != "":
		return strings.HasSuffix(prefix, "-"+c)
	}
	return true
}

func (g *Gateway) identity() string {
	p, c := g.cfg.ProjectID, g.cfg.ContainerID
	if p == "" {
		p = "*"
	}
	if c == "" {
		c = "*"
	}
	return "project " + p + ", container " + c
}

// backendError answers when the service cannot be reached or broke the
// connection before answering: 502 with the container error body.
func (g *Gateway) backendError(ctx *fasthttp.RequestCtx, service string, err error) {
	g.cfg.Logger.Warn("gateway: service unreachable", "service", service, "err", err)
	reqpolicy.WriteFastError(ctx, http.StatusBadGateway, &fault.Error{Code: fault.CodeBackend, Details: service,
		Message: "service " + service + " is not answering (it may be restarting); try again shortly"})
}

// parseError answers a request fasthttp could not read (a malformed
// request line or header, a header block over maxHeaderBytes, a header
// that did not arrive in time) with the container error body; the status
// is fasthttp's.
func parseError(ctx *fasthttp.RequestCtx, err error) {
	if reqpolicy.CloseIfNothingRead(ctx, err) {
		return
	}
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		reqpolicy.WriteFastError(ctx, http.StatusRequestHeaderFieldsTooLarge, &fault.Error{Code: fault.CodeBadRequest,
			Details: "headers", Message: "the request line and headers exceed " + strconv.Itoa(maxHeaderBytes>>10) + " KiB"})
	case errors.As(err, &ne) && ne.Timeout():
		reqpolicy.WriteFastError(ctx, http.StatusRequestTimeout, &fault.Error{Code: fault.CodeTimeout, Details: "headers",
			Message: "the request headers did not arrive in time"})
	default:
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeBadRequest, Details: "request",
			Message: "the request could not be parsed as HTTP/1.1"})
	}
}

// fastLogger sends fasthttp's own messages (malformed requests, write
// errors) to the agent's log at warn level. Whatever quotes request bytes
// is cut: a request that did not parse may carry credentials.
type fastLogger struct{ l *slog.Logger }

func (f fastLogger) Printf(format string, args ...any) {
	f.l.Warn("gateway: " + redactQuoted(fmt.Sprintf(format, args...)))
}

// redactQuoted keeps a fasthttp message up to the first quoted request
// bytes after the connection's addresses ("... in \"GET / HTTP/1.1\r\n
// Authorization: ..."), which it replaces with "[request bytes omitted]".
func redactQuoted(msg string) string {
	const addrs = "error when serving connection "
	start := 0
	if i := strings.Index(msg, addrs); i >= 0 {
		// The two quoted addresses stay.
		start = i + len(addrs)
		for n := 0; n < 4 && start < len(msg); n++ {
			j := strings.IndexByte(msg[start:], '"')
			if j < 0 {
				return msg
			}
			start += j + 1
		}
	}
	if j := strings.IndexByte(msg[start:], '"'); j >= 0 {
		return msg[:start+j] + "[request bytes omitted]"
	}
	return msg
}
