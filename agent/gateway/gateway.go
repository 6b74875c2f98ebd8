// Package gateway owns the agent's front door: one address (--listen) in front
// of every container service. It routes by Host
// (`<project_id>-<container_id>-<service>-<instance>.<server_name>.<domain>`)
// and, for local use, by path (`/_/<service>/...`, prefix stripped and passed
// on as X-Forwarded-Prefix; a GET of `/_/<service>` itself redirects to
// `/_/<service>/` so relative links in a service's pages resolve), applies
// the proxy permissions decision (Authorizer) before anything reaches a
// service, and answers the agent's own status on a loopback-only path.
// Errors are the container error body {"code","details","message"}: 404
// NOT_FOUND for an unknown or stopped service, 403 FORBIDDEN when the
// Authorizer refuses, 502 BACKEND_ERROR when the service does not answer.
//
// Why net/http here when every service runs on Fiber/fasthttp: the gateway is
// a proxy, not an API. httputil.ReverseProxy streams bodies both ways without
// buffering, flushes server-sent events, and passes WebSocket upgrades through
// (it hijacks the client connection on a 101 and splices it to the upstream
// one), all of which fasthttp's proxying would need rebuilt by hand. It also
// keeps connection reuse to the loopback services and standard X-Forwarded-*
// handling in one tested place.
package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"deckhand/platform"
)

// StatusPath is where the gateway answers the agent's status (loopback only).
const StatusPath = "/_agent/status"

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
	// Status answers StatusPath.
	Status http.Handler
	// Authorizer decides who may pass; default LoopbackOnly.
	Authorizer Authorizer
	// Policy is the request policy (Host, Origin, Sec-Fetch-Site) checked
	// before anything else; default: Domain and no extra origins.
	Policy *platform.RequestPolicy
	// TrustProxyHeaders (--trust-proxy-headers): the gateway sits behind
	// the platform proxy, so the client is the right-most X-Forwarded-For
	// hop when the peer is a loopback or private address. Either way the
	// services get one X-Forwarded-For: the client as the gateway sees it.
	TrustProxyHeaders bool
	Logger            *slog.Logger
}

// Target is where a request is going.
type Target struct {
	Service  string
	Instance int
	ByHost   bool
	// Path is the path the service sees (escaped form).
	Path string
}

// Authorizer decides whether a request may reach its target. It returns
// nil to let it pass, or a *platform.Error (FORBIDDEN, UNAUTHORIZED) that
// the gateway renders. The proxy permissions evaluator replaces the default.
type Authorizer interface {
	Authorize(r *http.Request, t Target) *platform.Error
}

// LoopbackOnly is the rule of operations.md for a container without a
// proxy permissions document: nothing passes except from loopback.
type LoopbackOnly struct{}

// Authorize lets loopback clients through.
func (LoopbackOnly) Authorize(r *http.Request, t Target) *platform.Error {
	if IsLoopback(r.RemoteAddr) {
		return nil
	}
	return &platform.Error{Code: platform.CodeForbidden, Details: t.Service,
		Message: "no proxy permissions document applies to this container: only loopback clients may pass the gateway"}
}

// IsLoopback reports whether a RemoteAddr (host:port) is a loopback address.
// Forwarding headers are deliberately ignored: a client could forge them.
func IsLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Gateway is the http.Handler of the agent's front door.
type Gateway struct {
	cfg   Config
	known []string // longest first, so "notifications" wins over a shorter suffix
	proxy *httputil.ReverseProxy
}

type targetKey struct{}

type route struct {
	addr    string
	path    string // escaped
	service string
	prefix  string // the stripped /_/<service>, for X-Forwarded-Prefix
}

// New builds the gateway.
func New(cfg Config) *Gateway {
	if cfg.Authorizer == nil {
		cfg.Authorizer = LoopbackOnly{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Policy == nil {
		p, err := platform.NewRequestPolicy(cfg.Domain, nil)
		if err != nil {
			panic("gateway: " + err.Error()) // no origins: cannot fail
		}
		cfg.Policy = p
	}
	g := &Gateway{cfg: cfg, known: append([]string(nil), cfg.Known...)}
	sort.Slice(g.known, func(i, j int) bool { return len(g.known[i]) > len(g.known[j]) })
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rt := pr.In.Context().Value(targetKey{}).(*route)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = rt.addr
			pr.Out.Host = rt.addr
			pr.Out.URL.Path, _ = url.PathUnescape(rt.path)
			pr.Out.URL.RawPath = rt.path
			// Rewrite has already dropped the client's Forwarded and
			// X-Forwarded-{For,Host,Proto}; these are the gateway's own,
			// the only X-Forwarded-Host a service trusts.
			pr.SetXForwarded()
			if g.cfg.TrustProxyHeaders {
				pr.Out.Header.Set("X-Forwarded-For", forwardedClient(pr.In))
			}
			pr.Out.Header.Del("X-Real-Ip")
			// Where the service sits under path routing, so a web page it
			// serves can build links that come back through the gateway.
			pr.Out.Header.Del("X-Forwarded-Prefix")
			if rt.prefix != "" {
				pr.Out.Header.Set("X-Forwarded-Prefix", rt.prefix)
			}
		},
		Transport: &http.Transport{
			Proxy:                 nil, // services are local; never via $HTTP_PROXY
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          128,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 0, // long polls and streams are legitimate
		},
		FlushInterval: -1, // event streams and terminal output go out as written
		ErrorHandler:  g.backendError,
		ErrorLog:      slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return g
}

// ServeHTTP routes one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var local net.IP
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		local = a.IP
	}
	if perr := g.cfg.Policy.Check(platform.HTTPRequest(r, local)); perr != nil {
		platform.WriteHTTPError(w, perr)
		return
	}
	sanitizeConnection(r.Header)
	if r.URL.Path == StatusPath {
		if !IsLoopback(r.RemoteAddr) {
			platform.WriteHTTPError(w, &platform.Error{Code: platform.CodeForbidden, Message: "the agent status is served to loopback clients only", Details: "status"})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			platform.WriteHTTPError(w, &platform.Error{Code: platform.CodeMethodNotAllowed, Message: "method not allowed on this route", Details: "status"})
			return
		}
		g.cfg.Status.ServeHTTP(w, r)
		return
	}
	t, perr := g.Resolve(r)
	if perr != nil {
		platform.WriteHTTPError(w, perr)
		return
	}
	addr, ok := g.cfg.Backend(t.Service)
	if !ok {
		platform.WriteHTTPError(w, &platform.Error{Code: platform.CodeNotFound, Message: "service " + t.Service + " is not running on this agent", Details: t.Service})
		return
	}
	if perr := g.cfg.Authorizer.Authorize(r, t); perr != nil {
		platform.WriteHTTPError(w, perr)
		return
	}
	rt := &route{addr: addr, path: t.Path, service: t.Service}
	if !t.ByHost {
		rt.prefix = "/_/" + t.Service
		// A page at /_/<service> would resolve its relative links against
		// /_/; send browsers to the directory form, as file servers do.
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.EscapedPath() == rt.prefix {
			target := rt.prefix + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusPermanentRedirect)
			return
		}
	}
	ctx := context.WithValue(r.Context(), targetKey{}, rt)
	g.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// Resolve finds the service a request is for: by Host when the Host has the
// container form, else by the /_/<service>/ path prefix.
func (g *Gateway) Resolve(r *http.Request) (Target, *platform.Error) {
	if hr, ok := ParseHost(r.Host, g.cfg.Domain, g.known); ok {
		if !g.ownsPrefix(hr.Prefix) {
			return Target{}, &platform.Error{Code: platform.CodeNotFound, Details: "host",
				Message: "host " + hostOnly(r.Host) + " names another container; this agent serves " + g.identity()}
		}
		if hr.Instance != 1 {
			return Target{}, &platform.Error{Code: platform.CodeNotFound, Details: "instance",
				Message: "instance " + strconv.Itoa(hr.Instance) + " of service " + hr.Service + " does not exist (1 is the only instance)"}
		}
		return Target{Service: hr.Service, Instance: hr.Instance, ByHost: true, Path: r.URL.EscapedPath()}, nil
	}
	esc := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(esc, "/_/"); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if name == "" {
			return Target{}, &platform.Error{Code: platform.CodeNotFound, Details: "service", Message: "no service named after /_/"}
		}
		if !g.isKnown(name) {
			return Target{}, &platform.Error{Code: platform.CodeNotFound, Details: "service",
				Message: "unknown service " + strconv.Quote(name) + " (services: " + strings.Join(g.cfg.Known, ", ") + ")"}
		}
		return Target{Service: name, Instance: 1, Path: "/" + sub}, nil
	}
	return Target{}, &platform.Error{Code: platform.CodeNotFound, Details: "route",
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
// connection: 502 with the container error body.
func (g *Gateway) backendError(w http.ResponseWriter, r *http.Request, err error) {
	rt, _ := r.Context().Value(targetKey{}).(*route)
	name := "?"
	if rt != nil {
		name = rt.service
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away; nobody is listening for an answer
	}
	g.cfg.Logger.Warn("gateway: service unreachable", "service", name, "err", err)
	platform.WriteHTTPErrorStatus(w, http.StatusBadGateway, &platform.Error{Code: platform.CodeBackend, Details: name,
		Message: "service " + name + " is not answering (it may be restarting); try again shortly"})
}

// forwardedClient is the client address behind a trusted proxy: the
// right-most X-Forwarded-For hop (the one the proxy added), only when the
// peer is a loopback or private address; else the peer.
func forwardedClient(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer := net.ParseIP(host)
	if peer == nil || !(peer.IsLoopback() || peer.IsPrivate() || peer.IsLinkLocalUnicast()) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		if ip := net.ParseIP(strings.TrimSpace(hops[i])); ip != nil {
			return ip.String()
		}
	}
	return peer.String()
}

// sanitizeConnection keeps only the Connection tokens HTTP itself defines.
// Any other token names a header the proxy would drop as hop-by-hop, and a
// client must not be able to make an end-to-end header (Origin,
// Sec-Fetch-Site, Cookie ...) vanish before the service checks it.
func sanitizeConnection(h http.Header) {
	vals, ok := h["Connection"]
	if !ok {
		return
	}
	var keep []string
	for _, v := range vals {
		for _, tok := range strings.Split(v, ",") {
			tok = strings.TrimSpace(tok)
			switch strings.ToLower(tok) {
			case "upgrade", "close", "keep-alive":
				keep = append(keep, tok)
			}
		}
	}
	if len(keep) == 0 {
		h.Del("Connection")
		return
	}
	h["Connection"] = []string{strings.Join(keep, ", ")}
}
