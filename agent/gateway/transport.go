package gateway

import (
	"maps"

	"github.com/valyala/fasthttp"
)

// transport carries a request the gateway has admitted and rewritten to
// its service. There are two: the proxy to the service's own server
// (proxy, proxy.go and upgrade.go) and the call in place for a service in
// this process (direct, dispatch.go). route picks one per request
// (choose), and nothing downstream decides between them again.
type transport interface {
	// Serve passes a plain request and leaves the answer in ctx.Response
	// for the server to write, unless the service took the connection.
	// clientClose: the client's wish to close after this request, which
	// rewrite dropped with its Connection header.
	Serve(ctx *fasthttp.RequestCtx, clientClose bool)
	// Upgrade passes a request to switch protocols (WebSocket). Once the
	// service switches, the client's connection is a tunnel (Tunnels,
	// Shutdown) until either side closes; a refusal is an ordinary answer
	// after which the connection closes.
	Upgrade(ctx *fasthttp.RequestCtx)
}

// choose is the one decision between the transports: in place when the
// service runs in this process, its own server would take the request
// (InProcess.takes) and, for an Upgrade, the gateway accepted the
// client's connection itself (only there does it see the tunnel close);
// the proxy otherwise. Call it before rewrite: takes judges the request
// as the client sent it.
func (g *Gateway) choose(ctx *fasthttp.RequestCtx, service, addr string, upgrade bool) transport {
	var in *InProcess
	if g.cfg.InProcess != nil {
		in = g.cfg.InProcess(service)
	}
	l := g.lane(service, addr, in)
	if in != nil && in.takes(ctx) && (!upgrade || ownConn(ctx) != nil) {
		return &l.direct
	}
	return &l.proxy
}

// lane is a running service's pair of transports. The gateway keeps one
// per service, so the transport a request gets is a pointer into it and
// choosing allocates nothing; a service that restarts on another address
// or with another InProcess gets a new lane (a lane never changes, so a
// request in flight keeps the one it chose).
type lane struct {
	proxy  proxy
	direct direct
}

func (l *lane) is(addr string, in *InProcess) bool {
	return l != nil && l.proxy.addr == addr && l.direct.in == in
}

// lane gives service's lane for addr and in, building it on first use or
// after a restart. Every admitted request asks, so a read takes no lock:
// the lanes map is replaced whole, under g.mu, and never written in place.
func (g *Gateway) lane(service, addr string, in *InProcess) *lane {
	if m := g.lanes.Load(); m != nil {
		if l := (*m)[service]; l.is(addr, in) {
			return l
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := map[string]*lane{}
	if m := g.lanes.Load(); m != nil {
		old = *m
	}
	if l := old[service]; l.is(addr, in) {
		return l // built by a request that took g.mu first
	}
	l := &lane{
		proxy:  proxy{g: g, service: service, addr: addr, hc: g.clientLocked(addr)},
		direct: direct{g: g, service: service, in: in},
	}
	m := maps.Clone(old)
	m[service] = l
	g.lanes.Store(&m)
	return l
}
