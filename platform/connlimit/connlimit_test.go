package connlimit_test

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/connlimit"
)

func TestLimitCountsTotalAndPerKey(t *testing.T) {
	l := connlimit.Limit{Total: 3, PerKey: 2}
	if !l.Acquire("65534") || !l.Acquire("65534") {
		t.Fatal("the first two of one key were refused")
	}
	if l.Acquire("65534") {
		t.Fatal("a third of one key passed its cap")
	}
	if !l.Acquire("0") || l.Acquire("1000") {
		t.Fatal("the total cap did not hold")
	}
	l.Release("65534")
	if !l.Acquire("1000") || l.Open() != 3 {
		t.Fatalf("a released slot was not given back (%d open)", l.Open())
	}
}

type failing struct {
	net.Listener
	fails atomic.Int32
}

func (l *failing) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestListenerBacksOffAndCaps(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &failing{Listener: raw}
	f.fails.Store(4)
	limit := &connlimit.Limit{Total: 1}
	var warned atomic.Int32
	ln := connlimit.Listener(f, limit, func(string, error) { warned.Add(1) })
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	c1, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1 := <-accepted // after four EMFILEs
	if warned.Load() == 0 {
		t.Fatal("the failures were not reported")
	}
	// Above the cap: closed at once, never handed out.
	c2, err := net.Dial("tcp", raw.Addr().String())
	if err == nil {
		_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c2.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Fatalf("a connection above the cap stayed open: %v", err)
		}
		c2.Close()
	}
	select {
	case c := <-accepted:
		t.Fatalf("a connection above the cap was handed out: %v", c.RemoteAddr())
	case <-time.After(200 * time.Millisecond):
	}
	// Closing the first gives its slot back.
	s1.Close()
	s1.Close()
	c3, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	select {
	case s3 := <-accepted:
		s3.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no slot after the first connection closed")
	}
	if limit.Open() != 0 {
		t.Fatalf("%d slots held after every connection closed", limit.Open())
	}
	raw.Close()
	if _, ok := <-accepted; ok {
		t.Fatal("Accept went on after the listener closed")
	}
}
