package gateway

import (
	"bytes"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/platform/clientip"
)

// Hop-by-hop headers (RFC 9110 7.6.1) and the ones the gateway owns: none
// of the client's copies reaches a service. Tokens a client lists in
// Connection are deliberately not honoured: naming Origin, Cookie or
// Sec-Fetch-Site there must not make an end-to-end header vanish before the
// service checks it.
var dropRequest = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade", "Expect", "Forwarded", "X-Forwarded-For",
	"X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Prefix", "X-Real-Ip"}

// dropResponse are a service's hop-by-hop response headers.
var dropResponse = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Trailer", "Upgrade"}

// rewrite turns the client's request, in place, into the one the service
// gets: the service's path and query, Host = the service's address, the
// gateway's own X-Forwarded-*, no hop-by-hop headers. The request target
// is set verbatim (escaped form), never re-encoded.
func (g *Gateway) rewrite(ctx *fasthttp.RequestCtx, addr, path, query, prefix string) {
	h := &ctx.Request.Header
	client := ""
	if g.cfg.TrustProxyHeaders {
		client = forwardedClient(ctx.RemoteIP(), h.PeekAll("X-Forwarded-For"))
	} else {
		client = ctx.RemoteIP().String()
	}
	proto := "http"
	if ctx.IsTLS() {
		proto = "https"
	}
	host := string(h.Host())
	upgrade := isUpgrade(h)
	var up []byte
	if upgrade {
		up = append(up, h.Peek("Upgrade")...)
	}
	for _, k := range dropRequest {
		h.Del(k)
	}
	if upgrade {
		h.SetBytesV("Upgrade", up)
		h.Set("Connection", "Upgrade")
	}
	if query != "" {
		ctx.Request.SetRequestURI(path + "?" + query)
	} else {
		ctx.Request.SetRequestURI(path)
	}
	h.SetHost(addr)
	ctx.Request.UseHostHeader = true
	h.Set("X-Forwarded-For", client)
	h.Set("X-Forwarded-Host", host)
	h.Set("X-Forwarded-Proto", proto)
	if prefix != "" {
		// Where the service sits under path routing, so a web page it
		// serves can build links that come back through the gateway.
		h.Set("X-Forwarded-Prefix", prefix)
	}
}

// forward sends the rewritten request to the service on a pooled
// keep-alive connection and hands its response to the server, which
// writes it out: small bodies from memory, larger and chunked ones streamed
// from the service's connection as they come (the connection goes back to
// the pool when the body has been copied).
func (g *Gateway) forward(ctx *fasthttp.RequestCtx, addr, service string, clientClose bool) {
	req := &ctx.Request
	req.Header.ResetConnectionClose()
	req.Header.SetProtocol("HTTP/1.1")
	if req.IsBodyStream() {
		// The header had headerTimeout; an upload takes as long as it takes.
		_ = ctx.Conn().SetReadDeadline(time.Time{})
	}
	if err := g.client(addr).Do(req, &ctx.Response); err != nil {
		g.backendError(ctx, service, err)
		if clientClose {
			ctx.SetConnectionClose()
		}
		return
	}
	rh := &ctx.Response.Header
	rh.ResetConnectionClose() // the service's connection is the pool's business
	for _, k := range dropResponse {
		rh.Del(k)
	}
	rh.SetNoDefaultContentType(true)
	if clientClose {
		ctx.SetConnectionClose()
	}
}

// client is the connection pool to one service address.
func (g *Gateway) client(addr string) *fasthttp.HostClient {
	g.mu.Lock()
	defer g.mu.Unlock()
	if hc, ok := g.clients[addr]; ok {
		return hc
	}
	hc := &fasthttp.HostClient{
		Addr:                     addr,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true, // the service sees the client's escaped path
		StreamResponseBody:       true,
		// Bodies up to this size are read whole (one copy, connection back
		// to the pool at once); anything larger or chunked is streamed.
		MaxResponseBodySize: 64 << 10,
		ReadBufferSize:      maxHeaderBytes,
		// Idle connections go before the services' own 120 s idle timeout.
		MaxIdleConnDuration: 60 * time.Second,
		// Each stream, long poll and upload holds one connection.
		MaxConns:           1 << 16,
		MaxConnWaitTimeout: 5 * time.Second,
		Dial: func(addr string) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, 2*time.Second)
		},
	}
	g.clients[addr] = hc
	return hc
}

// isUpgrade reports a request to switch protocols (WebSocket): an Upgrade
// header and the upgrade token in Connection.
func isUpgrade(h *fasthttp.RequestHeader) bool {
	if len(h.Peek("Upgrade")) == 0 {
		return false
	}
	for _, v := range h.PeekAll("Connection") {
		for _, tok := range bytes.Split(v, []byte(",")) {
			if bytes.EqualFold(bytes.TrimSpace(tok), []byte("upgrade")) {
				return true
			}
		}
	}
	return false
}

// forwardedClient is the client address behind a trusted proxy, by the
// rule of package clientip (right-most hop of every X-Forwarded-For line,
// only a bare IP, only from a nearby peer; else the peer).
func forwardedClient(peer net.IP, xff [][]byte) string {
	if ip := clientip.Resolve(clientip.FromIP(peer), xff); ip.IsValid() {
		return ip.String()
	}
	return peer.String()
}
