package deckhand_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// The package's tests share one control plane and one agent, started from
// the real binaries.
var (
	bin     string
	control *harness.Control
	agent   *harness.Agent
	// hasDisplay: the agent runs with an X display (Xvfb and
	// deckhand-display were found), so screenshots work.
	hasDisplay bool
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "deckhand-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if bin, err = harness.Bin(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if control, err = harness.StartControl(bin, filepath.Join(tmp, "control")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer control.Stop()
	x, display, err := harness.StartXvfb(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if x != nil {
		defer x.Stop()
	}
	hasDisplay = display != ""
	if agent, err = harness.StartAgent(bin, filepath.Join(tmp, "agent"), display); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer agent.Stop()
	if _, err := control.User("example@example.com", "10.00"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for k, v := range map[string]string{"DECKHAND_CONTROL_URL": control.URL, "DECKHAND_GATEWAY_URL": agent.URL,
		"DECKHAND_EMAIL": "example@example.com", "DECKHAND_PASSWORD": harness.UserPass} {
		os.Setenv(k, v)
	}
	code := m.Run()
	stopSandboxes()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "control plane output:\n%s\nagent output:\n%s\n", control.Output(), agent.Output())
	}
	return code
}

// proxy is a TCP proxy in front of target that a test can make misbehave:
// cut every open connection, cut once after some bytes, or rewrite what
// the server answers.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	dials int
	// cutAfter, when > 0, closes the connection that carries the
	// cutAfter-th byte (either way) and is then reset to 0.
	cutAfter int64
	moved    int64
	// rewrite, when set, may change each read from the server.
	rewrite func([]byte) []byte
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.dials++
	p.mu.Unlock()
	go p.pipe(s, c, nil)
	p.pipe(c, s, func(b []byte) []byte {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.rewrite != nil {
			return p.rewrite(b)
		}
		return b
	})
}

// pipe copies from src to dst (through fix, for server answers).
func (p *proxy) pipe(dst, src net.Conn, fix func([]byte) []byte) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			b := buf[:n]
			if fix != nil {
				b = fix(b)
			}
			p.mu.Lock()
			p.moved += int64(n)
			cut := p.cutAfter > 0 && p.moved >= p.cutAfter
			if cut {
				p.cutAfter = 0
			}
			p.mu.Unlock()
			if cut {
				return
			}
			if _, err := dst.Write(b); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut closes every connection open now.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// cutOnceAfter makes the proxy drop the connection carrying the n-th
// byte from now.
func (p *proxy) cutOnceAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.moved, p.cutAfter = 0, n
}

func (p *proxy) dialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

func hostOf(u string) string { return u[len("http://"):] }
