package localtcp_test

import (
	"context"
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"deckhand/platform/localtcp"
)

// congestion is a socket's congestion control.
func congestion(t *testing.T, c syscall.Conn) string {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var gerr error
	_ = rc.Control(func(fd uintptr) { name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return name
}

// setPaced sets a controller other than reno on the socket behind rc (the
// connections a listener accepts inherit it), so a test sees Tune act; it
// skips the test where the kernel lets this process choose none.
func setPaced(t *testing.T, rc syscall.RawConn) {
	t.Helper()
	for _, cc := range []string{"bbr", "cubic"} {
		var serr error
		_ = rc.Control(func(fd uintptr) { serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
		if serr == nil {
			return
		}
	}
	t.Skip("this kernel lets this process choose no controller but reno (net.ipv4.tcp_allowed_congestion_control)")
}

// pacedListener listens on loopback with a controller other than reno.
func pacedListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	setPaced(t, rc)
	return ln
}

func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAcceptedLocalConnectionIsUnpaced(t *testing.T) {
	t.Parallel()
	ln := pacedListener(t)
	plain := accept(t, ln)
	inherited := congestion(t, plain.(*net.TCPConn))
	if inherited == "reno" {
		t.Fatalf("the listener's controller was not inherited: %s", inherited)
	}
	c := accept(t, localtcp.Listener(ln))
	tc, ok := c.(*net.TCPConn)
	if !ok {
		t.Fatalf("Accept answered %T, want the socket itself", c)
	}
	if got := congestion(t, tc); got != "reno" {
		t.Errorf("a connection from this host uses %s, want reno (the listener's is %s)", got, inherited)
	}
}

func TestDialedLocalConnectionIsUnpaced(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	// The dialer's socket starts paced, so only Tune can make it reno.
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error { setPaced(t, rc); return nil }}
	c, err := localtcp.DialContext(d)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := <-accepted; s != nil {
		defer s.Close()
	}
	if got := congestion(t, c.(*net.TCPConn)); got != "reno" {
		t.Errorf("a connection to this host uses %s, want reno", got)
	}
}
