package gateway

import (
	"bytes"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// Request is the facts of one request an Authorizer decides on, with no
// HTTP stack in them: the proxy permissions evaluator takes facts in and
// gives a decision out, and tests build facts by hand.
type Request struct {
	Method string
	// Host is the Host header as the client sent it (port included).
	Host string
	// Path is the path as the client sent it (escaped form, no query);
	// Target.Path is what the service will see.
	Path string
	// RemoteIP is the peer of the connection. Forwarding headers never
	// change it: a client could forge them.
	RemoteIP net.IP
	// Source is the client address: RemoteIP, or under
	// --trust-proxy-headers the platform proxy's X-Forwarded-For hop when
	// the peer is a loopback or private address (what services are told
	// in X-Forwarded-For). Nil means RemoteIP.
	Source net.IP
	// Header returns a request header's first value ("" when absent).
	Header func(name string) string
	// Cookie and Query return a cookie's or query parameter's value ("" when
	// absent; nil functions mean none).
	Cookie func(name string) string
	Query  func(name string) string
	// TrustedPeer reports whether the connection's socket belongs to a
	// local user the agent trusts (root, its own user, --trusted-uids;
	// reqpolicy.LocalTrust). It reads the kernel's socket table once per
	// connection, so it is asked only when a decision depends on it. Nil
	// means no.
	TrustedPeer func() bool
}

// Client is Source, else RemoteIP.
func (r Request) Client() net.IP {
	if r.Source != nil {
		return r.Source
	}
	return r.RemoteIP
}

// Loopback reports a loopback client the agent trusts: the connection is
// from loopback, no trusted proxy named another client, and the socket
// belongs to a trusted local user. Any other local user is treated as an
// outside client.
func (r Request) Loopback() bool {
	c := r.Client()
	return c != nil && c.IsLoopback() && r.RemoteIP != nil && r.RemoteIP.IsLoopback() &&
		r.TrustedPeer != nil && r.TrustedPeer()
}

// Identity is who the Authorizer found a request to be; the gateway hands
// it to the service in IdentityHeaders. The zero value is "no identity"
// (the default policy let the request in).
type Identity struct {
	Group   string // the matched group of the proxy permissions document
	Type    string // its type (jwt, password, ip, token, service-identity) or "loopback"
	Subject string // jwt sub, password username, ip address, token location, claimed container
	// Port is the port the decision admitted: the service's, or for the
	// tunnel the tunnelled port (0 when no document decided). The gateway
	// hands it on in AuthorizedPortHeader.
	Port int
	// Credentials are where the matched group's credential travels in the
	// request: the gateway consumes them, and no service (no tunnelled
	// app) sees them.
	Credentials []Credential
	// Reach, for a target that acts for its caller on other services
	// (Config.ActsFor), lists the target and those of the others the
	// same decision admits; the gateway hands it on in
	// contract.ReachHeader.
	Reach []string
	// Tools, for a request to a service with a tool allow-list, is the
	// caller's tool allow-list (nil: no list); the gateway hands it on in
	// contract.ToolsHeader.
	Tools []string
}

// Credential is one place a credential travels in a request.
type Credential struct {
	In   string // CredentialHeader, CredentialCookie or CredentialQuery
	Name string
}

// Where a credential travels.
const (
	CredentialHeader = "header"
	CredentialCookie = "cookie"
	CredentialQuery  = "query"
)

// Authorizer decides whether a request may reach its target. It returns
// the caller's identity and nil to let it pass, or a *fault.Error
// (UNAUTHORIZED, FORBIDDEN, PROXY_DISABLED) that the gateway renders as
// the container error body. The proxy permissions evaluator (agent/access)
// replaces the default.
type Authorizer interface {
	Authorize(r Request, t Target) (Identity, *fault.Error)
}

// LoopbackOnly is the rule of docs/spec/operations.md for a container without a
// proxy permissions document: nothing passes except from loopback.
type LoopbackOnly struct {
	// ActsFor are the services each acting service calls for its caller
	// (Config.ActsFor): a loopback client reaches all of them.
	ActsFor map[string][]string
}

// Authorize lets trusted loopback clients through (Request.Loopback: a
// private peer's forged X-Forwarded-For: 127.0.0.1 does not make it
// loopback, nor does a local user the agent does not trust).
func (l LoopbackOnly) Authorize(r Request, t Target) (Identity, *fault.Error) {
	if r.Loopback() {
		id := Identity{Type: "loopback", Subject: r.Client().String()}
		if acts, ok := l.ActsFor[t.Service]; ok {
			id.Reach = append([]string{t.Service}, acts...)
			if slices.ContainsFunc(acts, contract.HasDesktopInput) {
				id.Reach = append(id.Reach, contract.DesktopReach)
			}
		}
		return id, nil
	}
	return Identity{}, &fault.Error{Code: fault.CodeForbidden, Details: t.Service,
		Message: "no proxy permissions document applies to this container: only loopback clients of trusted local users may pass the gateway"}
}

// authorize asks the Authorizer about one request, renders its refusal,
// and on success replaces any client-sent identity headers with the
// decision's and drops the credential headers and cookies it consumed
// (the caller drops consumed query parameters: withoutParams). It
// reports whether the request may go on.
func (g *Gateway) authorize(ctx *fasthttp.RequestCtx, host, path string, t Target) (Identity, bool) {
	h := &ctx.Request.Header
	facts := Request{Method: string(ctx.Method()), Host: host, Path: path, RemoteIP: ctx.RemoteIP(),
		Header:      func(name string) string { return string(h.Peek(name)) },
		Cookie:      func(name string) string { return string(h.Cookie(name)) },
		Query:       func(name string) string { return string(ctx.QueryArgs().Peek(name)) },
		TrustedPeer: func() bool { return g.cfg.LocalTrust.Trusted(ctx.Conn()) },
	}
	if g.cfg.TrustProxyHeaders {
		facts.Source = net.ParseIP(forwardedClient(ctx.RemoteIP(), h.PeekAll("X-Forwarded-For")))
	}
	id, perr := g.cfg.Authorizer.Authorize(facts, t)
	if perr != nil {
		reqpolicy.WriteFastError(ctx, 0, perr)
		return id, false
	}
	setIdentity(h, id)
	for _, c := range id.Credentials {
		switch c.In {
		case CredentialHeader:
			h.Del(c.Name)
		case CredentialCookie:
			h.DelCookie(c.Name)
		}
	}
	return id, true
}

// withoutParams drops the query parameters the gateway consumed as
// credentials from a raw query, keeping every other pair as it was
// written.
func withoutParams(query string, creds []Credential) string {
	var names []string
	for _, c := range creds {
		if c.In == CredentialQuery {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 || query == "" {
		return query
	}
	var b strings.Builder
	for _, pair := range strings.Split(query, "&") {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil && slices.Contains(names, k) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(pair)
	}
	return b.String()
}

var identityPrefix = []byte(contract.IdentityHeaderPrefix)

// setIdentity drops every client copy of the identity headers and of
// AuthorizedPortHeader, then sets the decision's.
func setIdentity(h *fasthttp.RequestHeader, id Identity) {
	var drop [][]byte
	for k := range h.All() {
		if len(k) >= len(identityPrefix) && bytes.EqualFold(k[:len(identityPrefix)], identityPrefix) {
			drop = append(drop, append([]byte(nil), k...))
		}
	}
	for _, k := range drop {
		h.DelBytes(k)
	}
	h.Del(platform.AuthorizedPortHeader)
	if id.Port > 0 {
		h.Set(platform.AuthorizedPortHeader, strconv.Itoa(id.Port))
	}
	if id.Reach != nil {
		h.Set(contract.ReachHeader, strings.Join(id.Reach, ","))
	}
	if id.Tools != nil {
		h.Set(contract.ToolsHeader, strings.Join(id.Tools, ","))
	}
	if id.Type == "" {
		return
	}
	if id.Group != "" {
		h.Set(contract.IdentityGroupHeader, headerSafe(id.Group))
	}
	h.Set(contract.IdentityTypeHeader, headerSafe(id.Type))
	if id.Subject != "" {
		h.Set(contract.IdentitySubjectHeader, headerSafe(id.Subject))
	}
}

// headerSafe keeps a value a client chose (a JWT's sub) to one printable
// line of at most 256 bytes.
func headerSafe(s string) string {
	if len(s) > 256 {
		s = s[:256]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = '_'
		}
	}
	return string(b)
}
