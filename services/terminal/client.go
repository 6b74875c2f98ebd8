package terminal

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// client is one WebSocket attached to a session. The PTY reader appends to
// pending under mu and never blocks; the writer goroutine swaps pending out
// and sends it as one binary frame, so bursts coalesce into large frames.
type client struct {
	conn  *websocket.Conn
	max   int
	ping  time.Duration
	grace time.Duration

	mu         sync.Mutex
	pending    []byte
	texts      [][]byte
	exitCode   *int
	overflowed bool

	// lastSeen (unix nanos) is when the peer last sent anything, a pong
	// included; the writer drops a peer silent for 2.5 ping intervals. A
	// timer rather than a read deadline, because the HTTP server may still
	// touch the connection's deadlines right after the hijack.
	lastSeen atomic.Int64

	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	drained chan struct{} // the session's: told whenever this writer takes its queue
}

func newClient(conn *websocket.Conn, maxQueue int, ping, grace time.Duration, drained chan struct{}) *client {
	c := &client{
		conn: conn, max: maxQueue, ping: ping, grace: grace,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), drained: drained,
	}
	c.seen()
	return c
}

// seen records that the peer is alive.
func (c *client) seen() { c.lastSeen.Store(time.Now().UnixNano()) }

// behind reports a queue over a quarter of its bound (see Session.pace).
func (c *client) behind() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.overflowed && c.exitCode == nil && len(c.pending) > c.max/4
}

func (c *client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// replay queues the scrollback; it is not counted against the queue bound.
func (c *client) replay(p []byte) {
	c.mu.Lock()
	c.pending = append(c.pending, p...)
	c.mu.Unlock()
	c.signal()
}

// push queues output; false means the client overflowed and must be dropped.
func (c *client) push(p []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.overflowed || c.exitCode != nil {
		return false
	}
	if len(c.pending)+len(p) > c.max {
		c.overflowed = true
		c.pending = nil
		// A writer stuck on a client that reads nothing gets grace to finish
		// its frame and send the 1008 close; then the socket is dropped.
		_ = c.conn.NetConn().SetWriteDeadline(time.Now().Add(c.grace))
		c.signal()
		return false
	}
	c.pending = append(c.pending, p...)
	c.signal()
	return true
}

// text queues a JSON control message for the client.
func (c *client) text(v any) {
	b, _ := json.Marshal(v)
	c.mu.Lock()
	c.texts = append(c.texts, b)
	c.mu.Unlock()
	c.signal()
}

// finish queues the exit message; it goes out after all queued output.
func (c *client) finish(code int) {
	c.mu.Lock()
	if c.exitCode == nil {
		c.exitCode = &code
	}
	c.mu.Unlock()
	c.signal()
}

// Frame coalescing while output streams (see writeLoop).
const (
	coalesceAbove  = 4096
	coalesceWindow = time.Millisecond
)

type exitMessage struct {
	Type string `json:"type"`
	Code int    `json:"code"`
}

type errorMessage struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// writeLoop is the only writer of c.conn apart from gorilla's pong replies
// (which gorilla serialises with its own lock). It ends after sending a
// close frame or on a write error; then it makes the read loop return.
func (c *client) writeLoop() {
	defer close(c.done)
	var spare []byte
	var lastLen int
	var lastEnd time.Time
	ticker := time.NewTicker(c.ping)
	defer ticker.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-ticker.C:
			if time.Since(time.Unix(0, c.lastSeen.Load())) > 2*c.ping+c.ping/2 {
				c.abort()
				return
			}
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)); err != nil {
				c.abort()
				return
			}
			continue
		case <-c.wake:
		}
		// While output streams (the last frame was large and just went out),
		// let a little more gather so frames stay large: fewer syscalls and
		// wake-ups on both ends. A keystroke echo after a pause goes at once.
		if lastLen >= coalesceAbove && time.Since(lastEnd) < coalesceWindow {
			time.Sleep(coalesceWindow)
		}
		c.mu.Lock()
		buf := c.pending
		c.pending = spare[:0]
		texts := c.texts
		c.texts = nil
		overflowed, exit := c.overflowed, c.exitCode
		c.mu.Unlock()
		select {
		case c.drained <- struct{}{}:
		default:
		}

		if overflowed {
			c.closeWith(websocket.ClosePolicyViolation, "client too slow: output queue overflowed")
			return
		}
		if len(buf) > 0 {
			_ = c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if err := c.conn.WriteMessage(websocket.BinaryMessage, buf); err != nil {
				c.abort()
				return
			}
			lastEnd = time.Now()
		}
		lastLen = len(buf)
		// Keep one buffer for reuse, but not a huge one from a burst.
		if cap(buf) <= 1<<20 {
			spare = buf[:0]
		} else {
			spare = nil
		}
		for _, t := range texts {
			_ = c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if err := c.conn.WriteMessage(websocket.TextMessage, t); err != nil {
				c.abort()
				return
			}
		}
		if exit != nil {
			c.mu.Lock()
			rest := len(c.pending)
			c.mu.Unlock()
			if rest > 0 {
				c.signal()
				continue
			}
			b, _ := json.Marshal(exitMessage{Type: "exit", Code: *exit})
			_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
				c.abort()
				return
			}
			c.closeWith(websocket.CloseNormalClosure, "session ended")
			return
		}
	}
}

// closeWith sends a close frame and gives the peer a moment to answer it, so
// the peer reads everything before the socket goes (closing with unread
// input would reset the connection and could lose the last frames). The
// timer cuts a peer that never answers, whatever happened to the deadline.
func (c *client) closeWith(code int, reason string) {
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(c.grace))
	_ = c.conn.NetConn().SetReadDeadline(time.Now().Add(2 * time.Second))
	nc := c.conn.NetConn()
	time.AfterFunc(3*time.Second, func() { _ = nc.Close() })
}

// abort makes the read loop return at once (the connection is broken).
func (c *client) abort() {
	_ = c.conn.NetConn().Close()
}
