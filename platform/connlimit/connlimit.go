package connlimit

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// FDLimit is the process's soft limit on open descriptors (RLIMIT_NOFILE;
// Go raises it to the hard limit at start), 1024 when it cannot be read.
func FDLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	if r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}

// Share is the part of the descriptor limit one listener may hold:
// limit / divisor connections (each needing perFD descriptors), at least
// min.
func Share(divisor, perConn, min int) int {
	n := FDLimit() / divisor / perConn
	if n < min {
		return min
	}
	return n
}

// Backoff waits between failed accepts: 5 ms doubling to 1 s, as
// net/http does.
type Backoff struct{ d time.Duration }

// Wait sleeps the next interval (or until stop is closed) and returns
// false when stop was closed.
func (b *Backoff) Wait(stop <-chan struct{}) bool {
	if b.d == 0 {
		b.d = 5 * time.Millisecond
	} else if b.d *= 2; b.d > time.Second {
		b.d = time.Second
	}
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// Reset starts the next series of waits from the shortest.
func (b *Backoff) Reset() { b.d = 0 }

// Fatal reports whether an Accept error ends the listener: only its close.
// Everything else (out of descriptors or memory, an aborted connection)
// passes, so the caller backs off and accepts again.
func Fatal(err error) bool { return errors.Is(err, net.ErrClosed) }

// Limit counts open connections against a total and a per-key cap.
type Limit struct {
	Total, PerKey int

	mu    sync.Mutex
	n     int
	byKey map[string]int
}

// Acquire takes a slot for key ("" counts only against the total); false
// when a cap is reached.
func (l *Limit) Acquire(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Total > 0 && l.n >= l.Total {
		return false
	}
	if key != "" && l.PerKey > 0 {
		if l.byKey == nil {
			l.byKey = map[string]int{}
		}
		if l.byKey[key] >= l.PerKey {
			return false
		}
		l.byKey[key]++
	}
	l.n++
	return true
}

// Release gives back a slot Acquire took for key.
func (l *Limit) Release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if key != "" && l.PerKey > 0 {
		if l.byKey[key]--; l.byKey[key] <= 0 {
			delete(l.byKey, key)
		}
	}
}

// Open is the number of slots taken.
func (l *Limit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Listener is ln whose Accept never fails but on ln's close (it backs off
// instead) and holds at most limit.Total connections open: one above it
// is closed as soon as it is accepted. warn, when set, hears why (called
// at most every 10 s).
func Listener(ln net.Listener, limit *Limit, warn func(msg string, err error)) net.Listener {
	return &listener{Listener: ln, limit: limit, warn: warn}
}

type listener struct {
	net.Listener
	limit *Limit
	warn  func(string, error)
	every Every
}

func (l *listener) say(msg string, err error) {
	if l.warn != nil && l.every.Allow(time.Now()) {
		l.warn(msg, err)
	}
}

// Every lets a warning through at most every 10 s, so a flood is one log
// line, not one a connection.
type Every struct {
	mu   sync.Mutex
	last time.Time
}

// Allow reports whether a warning at now may be said.
func (e *Every) Allow(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.last.IsZero() && now.Sub(e.last) < 10*time.Second {
		return false
	}
	e.last = now
	return true
}

func (l *listener) Accept() (net.Conn, error) {
	var b Backoff
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if Fatal(err) {
				return nil, err
			}
			l.say("accept failing; retrying", err)
			b.Wait(nil)
			continue
		}
		b.Reset()
		if !l.limit.Acquire("") {
			l.say("connection cap reached; new connections are closed at once", nil)
			Refuse(c)
			continue
		}
		return &conn{Conn: c, limit: l.limit}, nil
	}
}

// Refuse closes c with a reset (a TCP connection), so its client fails at
// once.
func Refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

type conn struct {
	net.Conn
	limit *Limit
	once  sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { c.limit.Release("") })
	return c.Conn.Close()
}
