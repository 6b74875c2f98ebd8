package process

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestRawWritevWholeBuffers: rawWritev writes every buffer whole and in
// order, more buffers than one writev takes and past a full socket buffer
// (partial writes, waits in the poller), and fails at its deadline.
func TestRawWritevWholeBuffers(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-acc
	if peer == nil {
		t.Fatal("accept failed")
	}
	defer peer.Close()
	w := rawWritev(c)
	if w == nil {
		t.Fatal("no raw writer for a TCP connection")
	}
	var bufs [][]byte
	var want []byte
	for i := 0; i < 21; i++ {
		b := bytes.Repeat([]byte{byte('a' + i)}, (i*i*37<<10)%(3<<20)+i)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	got := make(chan []byte, 1)
	go func() {
		// A slow reader: the socket buffers fill and writes come back partial.
		time.Sleep(50 * time.Millisecond)
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	if err := w(bufs); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("read %d bytes, want %d, or other bytes", len(b), len(want))
	}

	// Nobody reads now: a write that cannot finish ends at the deadline.
	_ = peer.Close()
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go func() { c, _ := ln.Accept(); acc <- c }()
	idle := <-acc
	if idle != nil {
		defer idle.Close()
	}
	_ = c2.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	big := make([]byte, 64<<20)
	if err := rawWritev(c2)([][]byte{big}); !os.IsTimeout(err) {
		t.Fatalf("a write nobody reads: %v, want a timeout", err)
	}
}

// TestRawReaderEndAndDeadline: rawReader reads a pipe's bytes, answers
// io.EOF at its end, and a read deadline ends a wait.
func TestRawReaderEndAndDeadline(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := rawReader(r)
	_ = r.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := read(make([]byte, 10)); !os.IsTimeout(err) {
		t.Fatalf("a read of an idle pipe: %v, want a timeout", err)
	}
	_ = r.SetReadDeadline(time.Time{})
	go func() { _, _ = w.Write([]byte("hello")); _ = w.Close() }()
	var got []byte
	buf := make([]byte, 3)
	for {
		n, err := read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != "hello" {
		t.Fatalf("read %q", got)
	}
}

// passConn passes its socket's descriptor through, as the agent's gateway
// does for a connection it hands to a service.
type passConn struct{ net.Conn }

func (c passConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// refuseConn is a wrapper over something that is not a plain socket.
type refuseConn struct{ net.Conn }

func (refuseConn) SyscallConn() (syscall.RawConn, error) { return nil, syscall.EOPNOTSUPP }

// TestRawWritevFindsTheSocket: the raw writer is for a connection that
// gives its socket's descriptor, itself or through a wrapper; a TLS
// connection, or a wrapper that hides or refuses the descriptor, gets none
// (the portable path writes through the connection).
func TestRawWritevFindsTheSocket(t *testing.T) {
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
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name string
		conn net.Conn
		raw  bool
	}{
		{"tcp", c, true},
		{"wrapper passing the descriptor", passConn{c}, true},
		{"wrapper hiding it", struct{ net.Conn }{c}, false},
		{"wrapper refusing it", refuseConn{c}, false},
		{"tls", tls.Client(c, &tls.Config{InsecureSkipVerify: true}), false},
	} {
		if got := rawWritev(tc.conn) != nil; got != tc.raw {
			t.Errorf("%s: raw writer %v, want %v", tc.name, got, tc.raw)
		}
	}
}
