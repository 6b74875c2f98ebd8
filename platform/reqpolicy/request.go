package reqpolicy

import (
	"net"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// Request is what the policy looks at, read from either HTTP stack.
type Request struct {
	Method string
	// Host is the Host header; ForwardedHost the gateway's X-Forwarded-Host
	// when the caller trusts it (see TrustForwardedHost), else "".
	Host, ForwardedHost string
	// LocalIP is the address the connection arrived on (may be nil).
	LocalIP        net.IP
	Origin         string
	HasOrigin      bool
	SecFetchSite   string
	SecFetchMode   string
	SecFetchDest   string
	SecFetchHasAny bool
	// The CORS preflight's Access-Control-Request-* headers (read only for
	// an OPTIONS request carrying Origin).
	PreflightMethod, PreflightHeaders string
	PreflightPrivateNetwork           bool
}

// TrustForwardedHost reports whether X-Forwarded-Host comes from the
// gateway: the gateway always overwrites the client's copy, and it runs on
// this machine, so only a peer on this machine (loopback, or the address
// the connection arrived on) may speak for the original Host. A browser
// cannot set the header (it is not CORS-safelisted and WebSockets take no
// custom headers), so a page cannot forge it either.
func TrustForwardedHost(peer, local net.IP) bool {
	return peer != nil && (peer.IsLoopback() || (local != nil && peer.Equal(local)))
}

// FastRequest reads the policy's view of a fasthttp request: the gateway's,
// which never trusts a forwarded host (it is the front door).
func FastRequest(rc *fasthttp.RequestCtx) Request {
	var local net.IP
	if a, ok := rc.LocalAddr().(*net.TCPAddr); ok {
		local = a.IP
	}
	h := &rc.Request.Header
	origin := h.Peek(fiber.HeaderOrigin)
	r := Request{Method: string(h.Method()), Host: string(h.Host()), LocalIP: local,
		HasOrigin: origin != nil, Origin: string(origin),
		SecFetchSite: string(h.Peek("Sec-Fetch-Site")), SecFetchMode: string(h.Peek("Sec-Fetch-Mode")),
		SecFetchDest: string(h.Peek("Sec-Fetch-Dest"))}
	if origin != nil && h.IsOptions() {
		r.PreflightMethod = string(h.Peek(fiber.HeaderAccessControlRequestMethod))
		r.PreflightHeaders = string(h.Peek(fiber.HeaderAccessControlRequestHeaders))
		r.PreflightPrivateNetwork = strings.EqualFold(string(h.Peek(fiber.HeaderAccessControlRequestPrivateNetwork)), "true")
	}
	return r
}

// gatewayDispatchKey marks a request the agent's gateway handed to an
// in-process service's handler itself (no loopback connection). A user
// value lives on the server side only: nothing a client sends can set it.
type gatewayDispatchKey struct{}

// MarkGatewayDispatch is for the agent's gateway only: it hands rc,
// already past the gateway's request policy and authorizer and rewritten
// as a proxied request (Host = the service's address, the gateway's own
// X-Forwarded-*), to the handler of a service listening on serviceIP. The
// service's host trusts the gateway's decision: it judges neither the
// peer nor Host and Origin again (GatewayDispatched). The socket peer
// stays the client's, so ClientIP is the gateway's view of the client, as
// the X-Forwarded-For the gateway sets.
func MarkGatewayDispatch(rc *fasthttp.RequestCtx, serviceIP net.IP) {
	if serviceIP == nil {
		serviceIP = net.IPv4(127, 0, 0, 1)
	}
	rc.SetUserValue(gatewayDispatchKey{}, serviceIP)
}

// GatewayDispatched reports whether the agent's gateway handed rc to the
// service's handler itself (MarkGatewayDispatch).
func GatewayDispatched(rc *fasthttp.RequestCtx) bool {
	_, ok := rc.UserValue(gatewayDispatchKey{}).(net.IP)
	return ok
}

// FiberRequest reads the policy's view of a Fiber request; the forwarded
// host counts only when TrustForwardedHost holds for the connection, or
// the gateway dispatched the request in-process (MarkGatewayDispatch).
func FiberRequest(c fiber.Ctx) Request {
	rc := c.RequestCtx()
	req := FastRequest(rc)
	trusted := false
	if ip, ok := rc.UserValue(gatewayDispatchKey{}).(net.IP); ok {
		req.LocalIP, trusted = ip, true
	} else {
		var peer net.IP
		if a, ok := rc.RemoteAddr().(*net.TCPAddr); ok {
			peer = a.IP
		}
		trusted = TrustForwardedHost(peer, req.LocalIP)
	}
	if fh := c.Get("X-Forwarded-Host"); fh != "" && trusted {
		req.ForwardedHost = fh
	}
	return req
}
