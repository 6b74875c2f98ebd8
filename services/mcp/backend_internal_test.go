package mcp

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/services/notes"
)

// offsets are the port offsets of the services these tests run, as the
// agent's registry declares them (contract.ServiceDeps.Offsets).
var offsets = map[string]int{"files": 2, "notes": 11, "mcp": 16}

// notesOnPort runs a real notes service on a loopback port and answers
// the port base that puts it there.
func notesOnPort(t testing.TB) int {
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
	u, err := url.Parse(platformtest.Serve(t, h))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p - offsets["notes"]
}

var putPlan = call{method: http.MethodPut, service: "notes", path: "/api/v1/notes/notebooks/nb/nodes/plan/document",
	body: notes.PutDocument{Title: "Plan", Blocks: []notes.Block{{ID: "a", Type: "text", Text: "x"}}, Version: new(int64)}}

var listNotes = call{method: http.MethodGet, service: "notes", path: "/api/v1/notes", query: url.Values{"notebook": {"nb"}}}

// TestPortCall: a call reaches the service on its port; a refusal keeps
// the service's code and message, and a service that does not listen is
// UNAVAILABLE.
func TestPortCall(t *testing.T) {
	t.Parallel()
	be := newBackend("127.0.0.1", notesOnPort(t), offsets)
	defer be.close()
	ctx := context.Background()
	var doc notes.Document
	if err := be.json(ctx, caller{}, putPlan, &doc); err != nil || doc.Version != 1 {
		t.Fatalf("write: %+v %v", doc, err)
	}
	var l notes.NodeList
	if err := be.json(ctx, caller{}, listNotes, &l); err != nil || len(l.Nodes) != 1 || l.Nodes[0].Title != "Plan" {
		t.Fatalf("list: %+v %v", l, err)
	}
	if err := be.json(ctx, caller{}, putPlan, nil); !isCode(err, notes.CodeVersionConflict) {
		t.Fatalf("a stale write: %v, want VERSION_CONFLICT", err)
	}
	gone := newBackend("127.0.0.1", platformtest.FreePortBase(t, offsets["notes"]+1), offsets)
	defer gone.close()
	if err := gone.json(ctx, caller{}, listNotes, &l); !isCode(err, fault.CodeUnavailable) {
		t.Fatalf("by a closed port: %v, want UNAVAILABLE", err)
	}
}

func isCode(err error, code string) bool {
	var pe *fault.Error
	return asPlatform(err, &pe) && pe.Code == code
}

// BenchmarkBackendCall: one composition's hop into a real notes service
// (GET /api/v1/notes) on its loopback port.
func BenchmarkBackendCall(b *testing.B) {
	be := newBackend("127.0.0.1", notesOnPort(b), offsets)
	defer be.close()
	var l notes.NodeList
	for b.Loop() {
		if err := be.json(context.Background(), caller{}, listNotes, &l); err != nil {
			b.Fatal(err)
		}
	}
}
