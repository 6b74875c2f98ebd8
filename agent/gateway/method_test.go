package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"deckhand/agent/gateway"
	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/platform/reqpolicy"
)

// TestUnknownMethodThroughTheGateway: a method the service's router does
// not know is answered in the container error body whether the gateway
// hands the request to the in-process service or proxies it.
func TestUnknownMethodThroughTheGateway(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	for name, base := range map[string]string{"direct": f.direct, "proxied": f.proxy} {
		req, _ := http.NewRequest("FOO", base+"/_/facts/x", nil)
		status, m, raw := platformtest.Do(t, req)
		if status != 501 || m["code"] != "NOT_IMPLEMENTED" || m["details"] != "method" {
			t.Errorf("%s: %d %s", name, status, raw)
		}
	}
}

// TestInProcessBodyKeepsTheReadTimeout: a service's short header timeout
// is not the time its body gets when the gateway hands the request over
// in-process: a body that comes after it, well within the read timeout,
// is read.
func TestInProcessBodyKeepsTheReadTimeout(t *testing.T) {
	t.Parallel()
	policy, _ := reqpolicy.NewRequestPolicy("example.test", nil)
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "facts"}, Logger: quiet, Policy: policy,
		HeaderTimeout: 200 * time.Millisecond}, factsService())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in := gateway.NewInProcess(host.App(), ln.Addr())
	go func() { _ = host.Serve(ln) }()
	t.Cleanup(func() { _ = host.Shutdown(context.Background()) })
	g := gateway.New(gateway.Config{Domain: "example.test", Known: []string{"facts"}, Logger: quiet, Authorizer: admitAll{},
		Backend:   func(n string) (string, bool) { return ln.Addr().String(), n == "facts" },
		InProcess: func(n string) *gateway.InProcess { return in }})
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(gln) }()
	t.Cleanup(func() { _ = g.Close() })

	conn, err := net.Dial("tcp", gln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second)) // a hang guard
	// Large enough that the gateway's server does not read it ahead of
	// the dispatch: the rest comes while the service reads.
	body := `{"slow":"` + strings.Repeat("s", 256<<10) + `"}`
	half := len(body) / 2
	fmt.Fprintf(conn, "POST /_/facts/facts HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", gln.Addr(), len(body), body[:half])
	time.Sleep(600 * time.Millisecond) // past the header timeout, far below the read timeout
	_, _ = io.WriteString(conn, body[half:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `slow`) {
		t.Fatalf("%d %.300s", resp.StatusCode, raw)
	}
}

// TestHeaderTimeoutThroughTheGateway: a connection that sends nothing for
// the gateway's header timeout (10 s) is closed without an answer, since
// a browser may use a connection it opened ahead of need long after and
// would read a queued answer as its own; one that began a request and
// stalled is answered 408 in the container error body.
func TestHeaderTimeoutThroughTheGateway(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	addr := strings.TrimPrefix(f.direct, "http://")
	type result struct {
		got []byte
		err error
	}
	open := func(sent string) chan result {
		ch := make(chan result, 1)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(60 * time.Second)) // a hang guard
			_, _ = io.WriteString(conn, sent)
			got, err := io.ReadAll(conn)
			ch <- result{got, err}
		}()
		return ch
	}
	silent := open("")
	cut := open("GET /_/facts/facts/x HTTP/1.1\r\nHost: " + addr + "\r\n")
	if r := <-silent; r.err != nil || len(r.got) != 0 {
		t.Errorf("nothing sent: %q %v, want the connection closed without an answer", r.got, r.err)
	}
	if r := <-cut; r.err != nil || !strings.HasPrefix(string(r.got), "HTTP/1.1 408 ") || !strings.Contains(string(r.got), `"TIMEOUT"`) {
		t.Errorf("headers cut short: %q %v, want 408 TIMEOUT", r.got, r.err)
	}
}

func TestLocalConnectionsSendUnpaced(t *testing.T) {
	t.Parallel()
	f := newDispatchFixture(t, false, false)
	if got := platformtest.AcceptedCongestion(t, strings.TrimPrefix(f.direct, "http://")); got != "reno" {
		t.Errorf("a connection from this host to the gateway uses %q, want reno", got)
	}
}
