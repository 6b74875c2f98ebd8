package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"deckhand/agent/gateway"
)

// exhausted is a listener whose first Accepts fail as a process out of
// descriptors sees them fail.
type exhausted struct {
	net.Listener
	fails atomic.Int32
}

func (l *exhausted) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestGatewayKeepsServingOutOfDescriptorsAndAboveItsCap(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up") })
	gw := gateway.New(gateway.Config{Domain: "example.test", Status: ok, Logger: quiet, MaxConns: 2})
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &exhausted{Listener: raw}
	ln.fails.Store(5)
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = gw.Shutdown(ctx)
		<-served
	})
	addr := raw.Addr().String()
	status := func() error {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + gateway.StatusPath)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return nil
	}
	// EMFILE from accept: the gateway waits and accepts again.
	if err := status(); err != nil {
		t.Fatalf("after EMFILE: %v", err)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned on EMFILE: %v", err)
	default:
	}

	// Two idle connections take the cap (once the server has seen the
	// status request's connection end); a third is closed at once.
	time.Sleep(300 * time.Millisecond)
	var idle []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond)
	if c, err := net.Dial("tcp", addr); err == nil { // a reset may come before connect returns
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Fatalf("a connection above the cap was kept: %v", err)
		}
		c.Close()
	}
	for _, c := range idle {
		c.Close()
	}
	// With them gone the gateway serves again.
	deadline := time.Now().Add(5 * time.Second)
	for status() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not serve after the idle connections closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned: %v", err)
	default:
	}
}
