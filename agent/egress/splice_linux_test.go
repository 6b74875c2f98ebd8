package egress

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"testing"
)

// tcpPair is both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c
	}()
	a, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	b := <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestPipeCarriesBothWays: pipe between two TCP connections (copyConn's
// splice) carries every byte both ways at once, passes each side's
// half-close on, and ends when both sides have.
func TestPipeCarriesBothWays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		down, up int // bytes towards the client, towards the server
	}{
		{"nothing", 0, 0},
		{"one byte each", 1, 1},
		{"uneven, odd sizes", 3<<20 + 7, 64<<10 - 1},
		{"bulk down, request up", 48 << 20, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, fwdIn := tcpPair(t)  // the redirected client and the forwarder's accepted end
			fwdOut, server := tcpPair(t) // the forwarder's upstream and the server
			done := make(chan struct{})
			go func() { defer close(done); pipe(fwdIn, fwdOut) }()
			rng := rand.New(rand.NewPCG(uint64(tc.down), uint64(tc.up)))
			gen := func(n int) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				return b
			}
			downData, upData := gen(tc.down), gen(tc.up)
			// Each side writes its bytes, half-closes, and reads the other's to the end.
			side := func(c *net.TCPConn, out []byte, got chan<- [32]byte) {
				go func() {
					_, _ = c.Write(out)
					_ = c.CloseWrite()
				}()
				h := sha256.New()
				_, _ = io.Copy(h, c)
				var s [32]byte
				copy(s[:], h.Sum(nil))
				got <- s
			}
			atServer, atClient := make(chan [32]byte, 1), make(chan [32]byte, 1)
			go side(server, downData, atServer)
			go side(client, upData, atClient)
			if got := <-atClient; !bytes.Equal(got[:], sum(downData)) {
				t.Errorf("the client got other bytes than the server sent (%d)", tc.down)
			}
			if got := <-atServer; !bytes.Equal(got[:], sum(upData)) {
				t.Errorf("the server got other bytes than the client sent (%d)", tc.up)
			}
			<-done
		})
	}
}

func sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
