package procnet_test

import (
	"net"
	"net/netip"
	"testing"

	"deckhand/platform/procnet"
)

// BenchmarkOwner is the price of judging one new loopback connection's
// owner (reqpolicy.LocalTrust reads it once per connection): sock_diag's
// exact lookup (diag) against a pass over /proc/net/tcp (scan), with the
// sockets this machine has open at the time.
func BenchmarkOwner(b *testing.B) {
	b.Run("diag", func(b *testing.B) { benchOwner(b, procnet.OwnerDiag) })
	b.Run("scan", func(b *testing.B) { benchOwner(b, procnet.OwnerScan) })
}

func benchOwner(b *testing.B, owner func(local, remote netip.AddrPort) (uint32, bool, error)) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	srv, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	peer, local := addrPort(srv.RemoteAddr()), addrPort(srv.LocalAddr())
	b.ResetTimer()
	for b.Loop() {
		if _, ok, err := owner(peer, local); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	rows := 0
	_ = procnet.Scan(func(procnet.Socket) bool { rows++; return false })
	b.ReportMetric(float64(rows), "sockets")
}
