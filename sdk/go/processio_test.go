package deckhand_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
)

// TestSignalOverBinaryStream starts a process that traps TERM, follows it
// over the WebSocket's binary frames, signals it once it is ready and
// reads how it ended: the signal reached its group, the output came whole.
func TestSignalOverBinaryStream(t *testing.T) {
	box := container(t, agent.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := []string{"sh", "-c", `trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.1; done`}
	hold := true
	p, err := box.StartRetrying(ctx, process.StartInput{Cmd: &cmd, HoldOutput: &hold}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	signalled := false
	end, err := box.Stream(ctx, p.Id, deckhand.StreamOptions{Binary: true, ReconnectFor: 10 * time.Second}, func(o deckhand.Output) error {
		mu.Lock()
		defer mu.Unlock()
		out.Write(o.Data)
		if !signalled && strings.Contains(out.String(), "ready\n") {
			signalled = true
			return box.Signal(ctx, p.Id, "TERM")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The whole group got TERM: the shell's trap ran (sh may also report
	// its sleep terminated, before or after the trap's line).
	if o := out.String(); end.ExitCode == nil || *end.ExitCode != 7 || !strings.HasPrefix(o, "ready\n") || !strings.Contains(o, "got-term\n") {
		code := -1
		if end.ExitCode != nil {
			code = *end.ExitCode
		}
		t.Fatalf("exit %d, output %q", code, out.String())
	}
	if err := box.Resize(ctx, p.Id, 10, 40); deckhand.ErrorCode(err) == "" {
		t.Fatalf("resize of a process without a pty: %v, want the service's refusal", err)
	}
}

// TestForward forwards a local port to a web server started in the
// container and fetches a page through it.
func TestForward(t *testing.T) {
	box := container(t, agent.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv, err := box.Process.Start(ctx, "python3", "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", "/")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Kill(context.Background()) }()
	fctx, stop := context.WithCancel(ctx)
	local := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- box.Forward(fctx, deckhand.ForwardOptions{Remote: port, Listening: func(a net.Addr) { local <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-local:
	case err := <-done:
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 10 * time.Second}
	var body []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := hc.Get("http://" + addr.String() + "/")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no page through the forward: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(string(body), "Directory listing") {
		t.Fatalf("page: %.200s", body)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
