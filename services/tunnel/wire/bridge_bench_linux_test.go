package wire_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/services/tunnel/wire"
)

// BenchmarkBridge moves 1 MiB chunks through the whole data path: a TCP
// source → client Bridge → WebSocket (masked) → server Bridge → a TCP
// sink, the shape `deckhand tunnel` and the service run in two processes.
//
//	go test -run x -bench . -benchtime 2000x ./services/tunnel/wire/
func BenchmarkBridge(b *testing.B) {
	sink, got := startSink(b)
	up := websocket.Upgrader{ReadBufferSize: wire.MinBufferSize, WriteBufferSize: wire.BufferSize, WriteBufferPool: &sync.Pool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c, err := net.Dial("tcp", sink)
		if err != nil {
			return
		}
		_ = wire.Bridge(ws, c, time.Minute, wire.Counters{})
	}))
	defer srv.Close()
	src, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	d := websocket.Dialer{ReadBufferSize: wire.MinBufferSize, WriteBufferSize: wire.BufferSize, WriteBufferPool: &sync.Pool{}}
	go func() {
		c, err := src.Accept()
		if err != nil {
			return
		}
		ws, _, err := d.Dial("ws"+srv.URL[len("http"):], nil)
		if err != nil {
			c.Close()
			return
		}
		_ = wire.Bridge(ws, c, time.Minute, wire.Counters{})
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
		n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
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
