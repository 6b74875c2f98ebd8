package mcp_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	mcpsvc "deckhand/services/mcp"
	"deckhand/services/process"
)

// TestProcessRunWalk follows an MCP process_run the way the agent serves
// it, both services in one process: while the command runs, the stack
// of the goroutine in the process service's Run, from the host's kernel
// down, passes through the platform (kernel, MCP server, the process
// host's binder) and then the process service, each room once: no frame of
// the mcp service's own and no return into the platform below the
// service.
func TestProcessRunWalk(t *testing.T) {
	peers := &contract.Peers{}
	pdeps := platformtest.ServiceDeps(t, "process")
	psvc, err := process.New(pdeps, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = psvc.Close() })
	ph, err := contract.NewServiceHost(psvc, pdeps)
	if err != nil {
		t.Fatal(err)
	}
	peers.Serve("process", ph)
	deps := platformtest.ServiceDeps(t, "mcp")
	deps.Peers = peers
	set := mcpsvc.Defaults()
	set.Services = "process"
	svc, err := mcpsvc.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	h, err := contract.NewServiceHost(svc, deps)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := platformtest.Serve(t, h) + mcpsvc.Path

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: &http.Transport{Proxy: nil}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "process_run", Arguments: map[string]any{"shell": "sleep 1"}})
		if err == nil && res.IsError {
			err = context.Canceled
		}
		done <- err
	}()
	var stack string
	for stack == "" {
		select {
		case err := <-done:
			t.Fatalf("process_run ended (%v) before its stack was seen", err)
		case <-time.After(20 * time.Millisecond):
		}
		buf := make([]byte, 8<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "deckhand/services/process.(*Service).Run(") {
				stack = g
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The rooms of the deckhand frames, outermost first, a room entered
	// again only after another one.
	var rooms []string
	lines := strings.Split(stack, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		fn, ok := strings.CutPrefix(lines[i], "deckhand/")
		if !ok {
			continue
		}
		room := fn[:strings.IndexAny(fn, "/.")]
		if room == "services" {
			room = fn[:strings.Index(fn, ".")]
		}
		if len(rooms) == 0 || rooms[len(rooms)-1] != room {
			rooms = append(rooms, room)
		}
	}
	if got := strings.Join(rooms, " → "); got != "platform → services/process" {
		t.Fatalf("the walk of process_run: %s, want platform → services/process\n%s", got, stack)
	}
}
