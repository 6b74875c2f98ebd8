package tunnelwire_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	wire "github.com/deckhand-dev/deckhand/sdk/go/tunnelwire"
)

// BenchmarkBridge moves 1 MiB chunks through the whole data path: a TCP
// source → client Bridge → WebSocket (masked) → server Bridge → a TCP
// sink, the shape `deckhand tunnel` and the service run in two processes.
// BenchmarkBridgeDown is the other way: the source is in the container,
// the sink on the user's side, and the frames are unmasked (spliced).
//
//	go test -run x -bench . -benchtime 2000x ./services/tunnel/wire/
func BenchmarkBridge(b *testing.B)     { benchBridge(b, false) }
func BenchmarkBridgeDown(b *testing.B) { benchBridge(b, true) }

func benchBridge(b *testing.B, down bool) {
	sink, got := startSink(b)
	// The service end dials the sink when the source is on the user's side,
	// else it is where the source connects.
	inside := make(chan net.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		var c net.Conn
		if down {
			c = <-inside
		} else if c, err = net.Dial("tcp", sink); err != nil {
			return
		}
		_ = wire.Bridge(wire.Server(gws.NetConn(), nil), c, time.Minute, wire.Counters{})
	}))
	defer srv.Close()
	src, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	go func() {
		c, err := src.Accept()
		if err != nil {
			return
		}
		var local net.Conn = c
		if down {
			inside <- c
			if local, err = net.Dial("tcp", sink); err != nil {
				return
			}
		}
		ws, err := wire.Dialer{}.Dial(context.Background(), "ws"+srv.URL[len("http"):])
		if err != nil {
			local.Close()
			return
		}
		_ = wire.Bridge(ws, local, time.Minute, wire.Counters{})
	}()
	send(b, src.Addr().String(), got)
}

// BenchmarkDirect is the same source and sink over one loopback TCP
// connection: the floor BenchmarkBridge's cpu-µs/MiB compares with.
func BenchmarkDirect(b *testing.B) {
	sink, got := startSink(b)
	send(b, sink, got)
}

// startSink accepts one connection, reads it to end of stream and sends
// the byte count on got.
func startSink(b *testing.B) (addr string, got <-chan int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	ch := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		n, _ := io.CopyBuffer(struct{ io.Writer }{io.Discard}, c, make([]byte, 256<<10)) // not Discard's 8 KiB ReadFrom
		ch <- n
		c.Close()
	}()
	return ln.Addr().String(), ch
}

// send writes b.N MiB to addr, half-closes, checks the sink got them all
// and reports the process's CPU time per MiB: steadier than MB/s on a
// shared machine, since it counts the work, not the wait for a core (the
// source and the sink included).
func send(b *testing.B, addr string, got <-chan int64) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	chunk := make([]byte, 1<<20)
	b.SetBytes(int64(len(chunk)))
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	_ = c.(*net.TCPConn).CloseWrite()
	if n := <-got; n != int64(b.N)*int64(len(chunk)) {
		b.Fatalf("sink got %d bytes, want %d", n, int64(b.N)*int64(len(chunk)))
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/MiB")
}

// BenchmarkRelayChain is the ceiling of any tunnel of the same shape: the
// source's bytes cross two plain TCP relays (io.Copy, which splices on
// Linux: no framing, no masking, no user-space copy) before the sink —
// three loopback hops, as source → client → service → sink.
func BenchmarkRelayChain(b *testing.B) {
	sink, got := startSink(b)
	next := sink
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ln.Close() })
		to := next
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			_, _ = io.Copy(d, c)
			_ = d.(*net.TCPConn).CloseWrite()
		}()
		next = ln.Addr().String()
	}
	send(b, next, got)
}
