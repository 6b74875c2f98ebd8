package localtcp_test

import (
	"net"
	"testing"

	"deckhand/platform/localtcp"
)

func TestLocal(t *testing.T) {
	t.Parallel()
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 4000} }
	for _, tc := range []struct {
		name          string
		local, remote net.Addr
		want          bool
	}{
		{"loopback v4", tcp("127.0.0.1"), tcp("127.0.0.1"), true},
		{"another loopback address", tcp("127.0.0.1"), tcp("127.0.0.2"), true},
		{"loopback v6", tcp("::1"), tcp("::1"), true},
		{"this host's own address", tcp("10.1.2.3"), tcp("10.1.2.3"), true},
		{"a peer elsewhere", tcp("10.1.2.3"), tcp("10.1.2.4"), false},
		{"a peer elsewhere on v6", tcp("fd00::1"), tcp("fd00::2"), false},
		{"not TCP", &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, false},
	} {
		if got := localtcp.Local(tc.local, tc.remote); got != tc.want {
			t.Errorf("%s: Local(%v, %v) = %v, want %v", tc.name, tc.local, tc.remote, got, tc.want)
		}
	}
}
