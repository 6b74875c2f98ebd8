package mcp

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/services/notes"
)

// offsets are the port offsets of the services these tests run, as the
// agent's registry declares them (contract.ServiceDeps.Offsets).
var offsets = map[string]int{"files": 2, "notes": 11, "mcp": 16}

// notesInProcess builds a real notes service and its host, prepared for
// in-memory calls as the agent prepares an in-process service.
func notesInProcess(t *testing.T) (*platform.Host, *gateway.InProcess, int) {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "notes")
	svc, err := notes.New(deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		t.Fatal(err)
	}
	base := platformtest.FreePortBase(t, offsets["notes"]+1)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: base + offsets["notes"]}
	return h, gateway.NewInProcess(h.App(), addr), base
}

var putPlan = call{method: http.MethodPut, service: "notes", path: "/api/v1/notes/notebooks/nb/nodes/plan/document",
	body: notes.PutDocument{Title: "Plan", Blocks: []notes.Block{{ID: "a", Type: "text", Text: "x"}}, Version: new(int64)}}

var listNotes = call{method: http.MethodGet, service: "notes", path: "/api/v1/notes", query: url.Values{"notebook": {"nb"}}}

// TestInMemoryCallNeedsNoSocket: with the notes service in this process
// and nothing listening on its port, a write and a list reach it in
// memory; the same calls without the in-memory path find no service.
func TestInMemoryCallNeedsNoSocket(t *testing.T) {
	t.Parallel()
	_, d, base := notesInProcess(t)
	var calls atomic.Int64
	be := newBackend("127.0.0.1", base, offsets, func(service string, rc *fasthttp.RequestCtx) bool {
		calls.Add(1)
		return service == "notes" && d.ServeInMemory(rc)
	})
	defer be.close()
	ctx := context.Background()
	var doc notes.Document
	if err := be.json(ctx, caller{}, putPlan, &doc); err != nil || doc.Version != 1 {
		t.Fatalf("in-memory write: %+v %v", doc, err)
	}
	var l notes.NodeList
	if err := be.json(ctx, caller{}, listNotes, &l); err != nil || len(l.Nodes) != 1 || l.Nodes[0].Title != "Plan" {
		t.Fatalf("in-memory list: %+v %v", l, err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d in-memory calls, want 2", calls.Load())
	}
	// A refusal keeps the service's code and message.
	if err := be.json(ctx, caller{}, putPlan, nil); !isCode(err, notes.CodeVersionConflict) {
		t.Fatalf("a stale write in memory: %v, want VERSION_CONFLICT", err)
	}
	port := newBackend("127.0.0.1", base, offsets, nil)
	defer port.close()
	if err := port.json(ctx, caller{}, listNotes, &l); !isCode(err, fault.CodeUnavailable) {
		t.Fatalf("by the closed port: %v, want UNAVAILABLE", err)
	}
}

// TestInMemoryCallIsJudgedByTheServicePolicy: the service's own request
// policy judges a call made in memory as one on its port: a Host that is
// not the service's is refused there too.
func TestInMemoryCallIsJudgedByTheServicePolicy(t *testing.T) {
	t.Parallel()
	_, d, base := notesInProcess(t)
	be := newBackend("rebind.example", base, offsets, func(_ string, rc *fasthttp.RequestCtx) bool { return d.ServeInMemory(rc) })
	defer be.close()
	var l notes.NodeList
	err := be.json(context.Background(), caller{}, listNotes, &l)
	var pe *fault.Error
	if !asPlatform(err, &pe) || pe.Code != fault.CodeMisdirected || len(l.Nodes) != 0 {
		t.Fatalf("a foreign Host in memory: %v, want the policy's refusal", err)
	}
}

// TestPortCallWhenNotInProcess: a service this process does not serve
// (an isolated child) is called on its port.
func TestPortCallWhenNotInProcess(t *testing.T) {
	t.Parallel()
	h, _, _ := notesInProcess(t)
	u, err := url.Parse(platformtest.Serve(t, h))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	var asked atomic.Int64
	be := newBackend("127.0.0.1", p-offsets["notes"], offsets, func(string, *fasthttp.RequestCtx) bool {
		asked.Add(1)
		return false // not in this process
	})
	defer be.close()
	var doc notes.Document
	if err := be.json(context.Background(), caller{}, putPlan, &doc); err != nil || doc.Version != 1 {
		t.Fatalf("write by the port: %+v %v", doc, err)
	}
	if asked.Load() != 1 {
		t.Fatalf("the in-memory path was asked %d times, want 1", asked.Load())
	}
}

func isCode(err error, code string) bool {
	var pe *fault.Error
	return asPlatform(err, &pe) && pe.Code == code
}

// BenchmarkBackendCall: one tool's hop into a real notes service (GET
// /api/v1/notes), in memory and by its loopback port, same run.
func BenchmarkBackendCall(b *testing.B) {
	deps := platformtest.ServiceDeps(b, "notes")
	svc, err := notes.New(deps, nil)
	if err != nil {
		b.Fatal(err)
	}
	h, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		b.Fatal(err)
	}
	u, err := url.Parse(platformtest.Serve(b, h))
	if err != nil {
		b.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	d := gateway.NewInProcess(h.App(), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
	base := p - offsets["notes"]
	for _, tc := range []struct {
		name string
		mem  func(string, *fasthttp.RequestCtx) bool
	}{
		{"in-memory", func(_ string, rc *fasthttp.RequestCtx) bool { return d.ServeInMemory(rc) }},
		{"port", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			be := newBackend("127.0.0.1", base, offsets, tc.mem)
			defer be.close()
			var l notes.NodeList
			for b.Loop() {
				if err := be.json(context.Background(), caller{}, listNotes, &l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
