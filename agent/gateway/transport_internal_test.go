package gateway

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestChooseOnceWithoutAllocating: a request to a service in this process
// gets the call in place, an Upgrade on a connection the gateway did not
// accept gets the proxy, and choosing allocates nothing once the
// service's lane exists; a restart (another address, another InProcess)
// gives a new lane.
func TestChooseOnceWithoutAllocating(t *testing.T) {
	in := &InProcess{handler: func(*fasthttp.RequestCtx) {}, bodyLimit: 1 << 20, headerLimit: 4096}
	g := New(Config{Known: []string{"files"}, InProcess: func(string) *InProcess { return in }})
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/api/v1/version")
	const addr = "127.0.0.1:1"

	tr := g.choose(&ctx, "files", addr, false)
	if _, ok := tr.(*direct); !ok {
		t.Fatalf("plain request: %T, want *direct", tr)
	}
	if tr := g.choose(&ctx, "files", addr, true); tr != transport(&g.lane("files", addr, in).proxy) {
		t.Fatalf("upgrade off the gateway's own connection: %T, want the lane's proxy", tr)
	}
	if n := testing.AllocsPerRun(100, func() { _ = g.choose(&ctx, "files", addr, false) }); n != 0 {
		t.Errorf("choose allocates %v times a request", n)
	}
	l := g.lane("files", addr, in)
	if g.lane("files", "127.0.0.1:2", in) == l || g.lane("files", addr, &InProcess{}) == l {
		t.Error("a restarted service kept its old lane")
	}
}
