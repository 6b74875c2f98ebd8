package splice_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"deckhand/platform/splice"
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
		c, _ := ln.AcceptTCP()
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

// TestCopy: every byte arrives in order and Copy answers its count and
// nil at the source's end, between TCP sockets (splice) and between other
// connections (the buffer).
func TestCopy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		size int
		tcp  bool
	}{
		{"tcp, nothing", 0, true},
		{"tcp, one byte", 1, true},
		{"tcp, odd size over the pipe's", 5<<20 + 3, true},
		{"tcp, bulk", 24 << 20, true},
		{"not tcp", 3<<20 + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := make([]byte, tc.size)
			rng := rand.New(rand.NewPCG(uint64(tc.size), 7))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			var in, src, dst, out net.Conn
			if tc.tcp {
				in, src = tcpPair(t)
				dst, out = tcpPair(t)
			} else {
				in, src = net.Pipe()
				dst, out = net.Pipe()
				t.Cleanup(func() { in.Close(); src.Close(); dst.Close(); out.Close() })
			}
			go func() {
				_, _ = in.Write(data)
				_ = in.Close()
			}()
			type result struct {
				n   int64
				err error
			}
			copied := make(chan result, 1)
			go func() {
				n, err := splice.Copy(dst, src)
				_ = dst.Close()
				copied <- result{n, err}
			}()
			h := sha256.New()
			if _, err := io.Copy(h, out); err != nil {
				t.Fatal(err)
			}
			r := <-copied
			if r.err != nil || r.n != int64(tc.size) {
				t.Fatalf("Copy: %d, %v; want %d, nil", r.n, r.err, tc.size)
			}
			want := sha256.Sum256(data)
			if !bytes.Equal(h.Sum(nil), want[:]) {
				t.Fatal("the bytes differ")
			}
		})
	}
}

// TestCopyWriteFails: a destination that is gone ends Copy with an error.
func TestCopyWriteFails(t *testing.T) {
	t.Parallel()
	in, src := tcpPair(t)
	dst, out := tcpPair(t)
	_ = out.SetLinger(0)
	_ = out.Close() // a reset: writes to dst fail
	go func() {
		chunk := make([]byte, 1<<20)
		for {
			if _, err := in.Write(chunk); err != nil {
				return
			}
		}
	}()
	if _, err := splice.Copy(dst, src); err == nil {
		t.Fatal("Copy to a reset connection answered no error")
	}
	_ = in.Close()
}

// TestCopyN moves exactly n bytes and leaves the rest readable from the
// source (a kept-alive connection's next answer); a source that ends
// first is io.EOF.
func TestCopyN(t *testing.T) {
	t.Parallel()
	for _, tcp := range []bool{true, false} {
		var in, src, dst, out net.Conn
		if tcp {
			in, src = tcpPair(t)
			dst, out = tcpPair(t)
		} else {
			in, src = net.Pipe()
			dst, out = net.Pipe()
			t.Cleanup(func() { in.Close(); src.Close(); dst.Close(); out.Close() })
		}
		const n = 3<<20 + 5
		data := make([]byte, n+100)
		rng := rand.New(rand.NewPCG(n, 9))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		go func() { _, _ = in.Write(data) }()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(out); got <- b }()
		w, err := splice.CopyN(dst, src, n)
		_ = dst.Close()
		if err != nil || w != n {
			t.Fatalf("tcp %v: CopyN: %d, %v", tcp, w, err)
		}
		if b := <-got; !bytes.Equal(b, data[:n]) {
			t.Fatalf("tcp %v: %d bytes arrived, not the first %d", tcp, len(b), n)
		}
		rest := make([]byte, 100)
		if _, err := io.ReadFull(src, rest); err != nil || !bytes.Equal(rest, data[n:]) {
			t.Fatalf("tcp %v: the rest of the source: %v", tcp, err)
		}
		// The source ends before n.
		d2, o2 := tcpPair(t)
		go func() { _, _ = io.Copy(io.Discard, o2) }()
		go func() { _, _ = in.Write([]byte("short")); _ = in.Close() }()
		if w, err := splice.CopyN(d2, src, 10); err != io.EOF || w != 5 {
			t.Fatalf("tcp %v: CopyN past the source's end: %d, %v", tcp, w, err)
		}
	}
}
