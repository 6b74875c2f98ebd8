package gateway

import (
	"crypto/tls"
	"net"
	"syscall"
	"testing"
)

// TestClientConnGivesOnlyAPlainSocket: the wrapper of an accepted
// connection passes the descriptor (SyscallConn, for a service's raw
// writes) and the socket itself (socketOf, for the splice) through for a
// plain TCP connection only; over TLS neither is given, so writers take
// the connection's own Write and the bytes are encrypted.
func TestClientConnGivesOnlyAPlainSocket(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tcp, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	for _, tc := range []struct {
		name  string
		inner net.Conn
		plain bool
	}{
		{"tcp", tcp, true},
		{"tls", tls.Client(tcp, &tls.Config{InsecureSkipVerify: true}), false},
	} {
		c := &clientConn{Conn: tc.inner}
		var sc net.Conn = c
		_, err := sc.(syscall.Conn).SyscallConn()
		if (err == nil) != tc.plain {
			t.Errorf("%s: SyscallConn error %v, want a descriptor: %v", tc.name, err, tc.plain)
		}
		got := socketOf(c)
		if tc.plain && got != tc.inner || !tc.plain && got != net.Conn(c) {
			t.Errorf("%s: socketOf gave %T", tc.name, got)
		}
	}
}
