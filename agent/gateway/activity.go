package gateway

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// LeasesPath is where a client takes a keep-alive lease on the agent:
// while one lasts the container does not count as idle (the control
// plane's idle stop). It is the agent's own route, on any Host.
const LeasesPath = "/api/v1/agent/leases"

// LeaseService is the service whose permission an outside client needs
// for a lease: whoever may run processes may keep the container busy.
const LeaseService = "process"

// activity counts the requests the gateway admitted: in flight now, and
// when the last one ended (the control plane's idle stop asks).
type activity struct {
	inflight atomic.Int64
	last     atomic.Int64 // unix nanoseconds
}

func (a *activity) begin() func() {
	a.inflight.Add(1)
	a.touch()
	return func() {
		a.touch()
		a.inflight.Add(-1)
	}
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

// Activity is the requests in flight, the upgraded connections open and
// when the last admitted request (or upgraded connection) ended. Health
// checks, refused requests and the agent's loopback status are not
// activity.
func (g *Gateway) Activity() (inflight, tunnels int, last time.Time) {
	n := g.act.last.Load()
	if n != 0 {
		last = time.Unix(0, n)
	}
	return int(g.act.inflight.Load()), g.Tunnels(), last
}

// isLeases says whether path is the leases route or one lease's.
func isLeases(path string) bool {
	return path == LeasesPath || strings.HasPrefix(path, LeasesPath+"/")
}

// serveLeases authorizes a lease request (a trusted loopback client, or
// one the proxy permissions admit to LeaseService) and hands it to the
// agent's handler with its path as LeasesPath[/id] (a client that names
// a service by path, /_/<service>/api/v1/agent/leases, reaches it too).
func (g *Gateway) serveLeases(ctx *fasthttp.RequestCtx, host, path, leases string) {
	if g.cfg.Leases == nil {
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeNotFound, Message: "this agent takes no keep-alive leases", Details: "leases"})
		return
	}
	if _, ok := g.authorize(ctx, host, path, Target{Service: LeaseService, Path: path}); !ok {
		return
	}
	defer g.act.begin()()
	ctx.URI().SetPath(leases)
	g.cfg.Leases(ctx)
}
