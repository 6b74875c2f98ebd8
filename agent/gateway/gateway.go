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
// A request past those checks reaches its service by one of two
// transports, chosen once per request (transport.go), each with Serve for
// a plain request and Upgrade for a WebSocket (any Upgrade). A service
// the agent runs in its own process (not --isolate) is called in place:
// its Fiber handler gets the client's own *fasthttp.RequestCtx, rewritten
// as for the proxy (dispatch.go, InProcess), and an Upgrade is answered on
// the client's own connection, which the gateway wraps (conn.go) to count
// it as a tunnel until it closes. An isolated service, and a request the
// service's own server would refuse before its handler, go through the
// proxy: one fasthttp.HostClient per service, pooled keep-alive
// connections, the request target passed on verbatim (proxy.go), and an
// Upgrade spliced to a connection of its own to the service (upgrade.go).
//
// What a reverse proxy library would give is kept by hand, here and tested:
// bodies stream both ways without buffering (StreamRequestBody on the
// server, StreamResponseBody on the clients, chunked responses such as
// server-sent events written out chunk by chunk, never a multipart form
// spooled); hop-by-hop headers are dropped (proxy.go); the Authorizer sees
// request facts, not an HTTP stack (authorize.go). Why fasthttp and
// dispatch in place, with the figures against nginx: BENCHMARKS.md.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"deckhand/platform/connlimit"
	"deckhand/platform/fault"
	"deckhand/platform/hostroute"
	"deckhand/platform/proxyperm"
	"deckhand/platform/reqpolicy"
	"deckhand/platform/tokenseal"
)

// PortPreviewService is the service that serves a port preview host
// (`<project>-<container>-p<port>-<n>...`): the tunnel's reverse proxy.
const PortPreviewService = "tunnel"

// StatusPath is where the gateway answers the agent's status (loopback only).
const StatusPath = "/_agent/status"

// HealthPath answers any client 200 {"status":"ok"} once the gateway
// serves, which is as soon as the agent starts: every service's port is
// bound by then, so a request for a service still starting waits for it
// rather than failing. It tells nothing else, so it is open to the
// engine's network and to any Host (the control plane checks a
// container's agent here before it calls it running).
const HealthPath = "/_agent/health"

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
	// Identity answers tokenseal.Path, the control plane's hand-over of
	// a claimed pool container's token (nil: 404). Like HealthPath it is
	// answered before the Host check: the control plane calls the
	// gateway by its address, and the handler admits only a hand-over
	// sealed for this agent.
	Identity http.Handler
	// Leases answers LeasesPath once the request is authorized (nil:
	// 404).
	Leases fasthttp.RequestHandler
	// Authorizer decides who may pass; default LoopbackOnly with ActsFor.
	Authorizer Authorizer
	// ActsFor are, by service, the services it calls for its caller (the
	// agent's registry): the default Authorizer lets a loopback client
	// reach them all.
	ActsFor map[string][]string
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
	cfg     Config
	known   []string // longest first, so "notifications" wins over a shorter suffix
	srv     *fasthttp.Server
	status  fasthttp.RequestHandler
	claim   fasthttp.RequestHandler
	handoff fasthttp.RequestHandler

	mu      sync.Mutex
	clients map[string]*fasthttp.HostClient // by service address
	// lanes: each running service's transports, by service name
	// (transport.go); read without g.mu, replaced whole under it.
	lanes atomic.Pointer[map[string]*lane]
	// tunnels: upgraded client connections, each with the gateway's
	// connection to the service when spliced (nil: the service, in this
	// process, took over the client's connection itself).
	tunnels map[net.Conn]net.Conn
	lns     []net.Listener
	conns   map[net.Conn]struct{} // open client connections, for Close
	closed  bool

	limit connlimit.Limit
	warns connlimit.Every
	act   activity
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
		cfg.Authorizer = LoopbackOnly{ActsFor: cfg.ActsFor}
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
	g.status, g.claim, g.handoff = adapt(cfg.Status), adapt(cfg.Claim), adapt(cfg.Identity)
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

// adapt serves h on fasthttp (nil: nil).
func adapt(h http.Handler) fasthttp.RequestHandler {
	if h == nil {
		return nil
	}
	return fasthttpadaptor.NewFastHTTPHandler(h)
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
	conns := slices.Collect(maps.Keys(g.conns))
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
	// Health is answered before the Host check: the control plane calls
	// the gateway by its address on the engine's network, and the answer
	// tells a rebinding page nothing.
	if path, _ := splitRequestURI(ctx.Request.Header.RequestURI()); path == HealthPath {
		if !ctx.IsGet() && !ctx.IsHead() {
			reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeMethodNotAllowed, Message: "method not allowed on this route", Details: "health"})
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"status":"ok"}`)
		return
	} else if path == tokenseal.Path && g.handoff != nil {
		g.handoff(ctx)
		return
	}
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

// route sends a request the policy let in to its service: the gateway's
// own routes are answered here; any other request is resolved to its
// service, authorized, given its transport (choose, the one place that
// decides between the proxy and the call in place), rewritten and passed
// on.
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
	if isLeases(path) {
		g.serveLeases(ctx, host, path, path)
		return
	}
	t, perr := g.Resolve(host, path)
	if perr != nil {
		reqpolicy.WriteFastError(ctx, 0, perr)
		return
	}
	if lp, err := url.PathUnescape(t.Path); err == nil && isLeases(lp) {
		g.serveLeases(ctx, host, path, lp)
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
	defer g.act.begin()()
	hadPreview := id.Type == proxyperm.TypePreview && ctx.QueryArgs().Has(proxyperm.PreviewParam)
	query = withoutParams(query, id.Credentials)
	if hadPreview && (ctx.IsGet() || ctx.IsHead()) {
		previewCookie(ctx, path, query)
		return
	}
	prefix := ""
	if !t.ByHost {
		prefix = "/_/" + t.Service
		// A page at /_/<service> would resolve its relative links against
		// /_/; send browsers to the directory form, as file servers do.
		if (ctx.IsGet() || ctx.IsHead()) && path == prefix {
			redirect(ctx, http.StatusPermanentRedirect, prefix+"/", query)
			return
		}
	}
	// Rewriting drops Connection; the client's wish to close is kept.
	clientClose := ctx.Request.Header.ConnectionClose() || !ctx.Request.Header.IsHTTP11()
	upgrade := isUpgrade(&ctx.Request.Header)
	tr := g.choose(ctx, t.Service, addr, upgrade)
	g.rewrite(ctx, addr, t.Path, query, prefix)
	if upgrade {
		tr.Upgrade(ctx)
	} else {
		tr.Serve(ctx, clientClose)
	}
}

// previewCookie moves a preview link's token from the query into a
// cookie for this host alone and sends the browser back to the same page
// without it, so the token leaves no trace in the address bar, history or
// Referer, and the page's own requests carry it.
func previewCookie(ctx *fasthttp.RequestCtx, path, query string) {
	tok := ctx.QueryArgs().Peek(proxyperm.PreviewParam)
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(proxyperm.PreviewCookie)
	c.SetValueBytes(tok)
	c.SetPath("/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	if ctx.IsTLS() || string(ctx.Request.Header.Peek("X-Forwarded-Proto")) == "https" {
		c.SetSecure(true)
	}
	ctx.Response.Header.SetCookie(c)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Referrer-Policy", "no-referrer")
	redirect(ctx, http.StatusSeeOther, path, query)
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

// redirect answers status to the path to with query; a 308 (to the
// directory form) gets a body, as http.Redirect gives it.
func redirect(ctx *fasthttp.RequestCtx, status int, to, query string) {
	if query != "" {
		to += "?" + query
	}
	ctx.Response.Header.Set("Location", to)
	ctx.SetStatusCode(status)
	if status == http.StatusPermanentRedirect && ctx.IsGet() {
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetBodyString("<a href=\"" + htmlEscaper.Replace(to) + "\">Permanent Redirect</a>.\n")
	}
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// splitRequestURI splits the request target as the client sent it into the
// escaped path and the raw query. An absolute-form target
// (http://host/path) yields its path.
func splitRequestURI(uri []byte) (path, query string) {
	s, _, _ := strings.Cut(string(uri), "#")
	s, query, _ = strings.Cut(s, "?")
	if !strings.HasPrefix(s, "/") {
		if _, rest, ok := strings.Cut(s, "://"); ok {
			_, p, _ := strings.Cut(rest, "/")
			s = "/" + p
		}
	}
	return s, query
}

// Resolve finds the service a request is for: by Host when the Host has the
// container form, else by the /_/<service>/ prefix of the escaped path.
func (g *Gateway) Resolve(host, path string) (Target, *fault.Error) {
	if hr, ok := hostroute.Parse(host, g.cfg.Domain, g.known); ok {
		if !g.ownsPrefix(hr.Prefix) {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "host",
				Message: "host " + hostroute.HostOnly(host) + " names another container; this agent serves " + g.identity()}
		}
		if hr.Instance != 1 {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "instance",
				Message: "instance " + strconv.Itoa(hr.Instance) + " of service " + hr.Service + " does not exist (1 is the only instance)"}
		}
		if hr.Port != 0 {
			// A port preview is the tunnel's reverse proxy to that port,
			// judged as a tunnelled port is; the page keeps its own root,
			// so root-relative links resolve.
			return Target{Service: PortPreviewService, Instance: 1, ByHost: true,
				Path: "/preview/" + strconv.Itoa(hr.Port) + path}, nil
		}
		return Target{Service: hr.Service, Instance: hr.Instance, ByHost: true, Path: path}, nil
	}
	if rest, ok := strings.CutPrefix(path, "/_/"); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if name == "" {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "service", Message: "no service named after /_/"}
		}
		if !slices.Contains(g.known, name) {
			return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "service",
				Message: "unknown service " + strconv.Quote(name) + " (services: " + strings.Join(g.cfg.Known, ", ") + ")"}
		}
		return Target{Service: name, Instance: 1, Path: "/" + sub}, nil
	}
	return Target{}, &fault.Error{Code: fault.CodeNotFound, Details: "route",
		Message: "no service named in the request: use the path /_/<service>/... or the Host <project_id>-<container_id>-<service>-1.<server_name>." + g.cfg.Domain}
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
	return "project " + cmp.Or(g.cfg.ProjectID, "*") + ", container " + cmp.Or(g.cfg.ContainerID, "*")
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
