// Package wire is the tunnel's WebSocket protocol, shared by the service
// (bridging to a port in the container) and the `deckhand tunnel` client
// (bridging a connection accepted on the user's machine):
//
//   - binary frames carry the stream's bytes, in order, both ways;
//   - a text frame {"type":"close_write"} says the sender's side reached end
//     of stream (TCP half-close, FIN): the receiver shuts down writing on
//     its socket and keeps reading, so `ssh host cmd <file` and HTTP/1.0
//     style "send, half-close, read the answer" work;
//   - when both directions have ended, either end closes with 1000; an
//     error closes with 1011 and the reason; a session cut by the service
//     (DELETE .../sessions/{id}) closes with 1000 "session deleted";
//   - each end pings every interval and cuts a peer silent for two (a
//     laptop that slept, a dropped network).
package wire

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// BufferSize is the largest chunk both ends copy in (one TCP read = one
// frame): a bulk transfer moves 1 MiB per system call and per frame, which
// costs about 20% less CPU per byte than 128 KiB (BenchmarkBridge).
// Copy buffers start at MinBufferSize and grow to it once a read fills
// one, so an idle or interactive tunnel holds 64 KiB, not 1 MiB, a way.
const BufferSize = 1 << 20

// MinBufferSize is a copy buffer's starting size, and the WebSocket read
// buffer's: a payload read of at least this much bypasses that buffer.
const MinBufferSize = 64 << 10

// grow gives a BufferSize buffer when the last read filled buf: a bulk
// transfer has begun. (Doubling stalls where reads return a bit less than
// the buffer; a read returns what the socket holds, up to the buffer.)
func grow(buf []byte, n int) []byte {
	if n == len(buf) && len(buf) < BufferSize {
		return make([]byte, BufferSize)
	}
	return buf
}

// Control is a text frame's JSON.
type Control struct {
	Type string `json:"type"`
}

// CloseWrite is the half-close control message.
const CloseWrite = "close_write"

var closeWriteFrame, _ = json.Marshal(Control{Type: CloseWrite})

// Counters receive the bytes copied each way; either may be nil.
type Counters struct {
	// FromWS counts bytes written to the socket (received over WebSocket).
	FromWS func(n int)
	// ToWS counts bytes read from the socket and sent over WebSocket.
	ToWS func(n int)
}

// closeWriter is a socket that can half-close (*net.TCPConn, *net.UnixConn).
type closeWriter interface{ CloseWrite() error }

// Bridge copies between ws and conn until both directions have ended or
// either side fails, then closes both. It returns nil after a clean end
// (both half-closes, or the peer's close 1000) and the failure otherwise.
func Bridge(ws *websocket.Conn, conn net.Conn, ping time.Duration, c Counters) error {
	b := &bridge{ws: ws, conn: conn, ping: ping, c: c, stop: make(chan struct{})}
	return b.run()
}

type bridge struct {
	ws   *websocket.Conn
	conn net.Conn
	ping time.Duration
	c    Counters

	mu                 sync.Mutex
	sentEOF, gotEOF    bool
	closeOnce, endOnce sync.Once
	stop               chan struct{}
}

func (b *bridge) run() error {
	b.ws.SetReadLimit(-1)
	b.extend()
	b.ws.SetPongHandler(func(string) error { b.extend(); return nil })
	b.ws.SetPingHandler(func(data string) error {
		b.extend()
		err := b.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	var wg sync.WaitGroup
	wg.Add(2)
	upErr := make(chan error, 1)
	go func() { defer wg.Done(); upErr <- b.up() }()
	go func() { defer wg.Done(); b.pinger() }()
	downErr := b.down()
	// The socket side is done (or the WebSocket failed): make sure the
	// other goroutines end too.
	b.closeAll(websocket.CloseNormalClosure, "")
	wg.Wait()
	up := <-upErr
	if downErr != nil {
		return downErr
	}
	return up
}

// extend pushes the read deadline two ping intervals out.
func (b *bridge) extend() { _ = b.ws.SetReadDeadline(time.Now().Add(2 * b.ping)) }

// down copies WebSocket → socket.
func (b *bridge) down() error {
	buf := make([]byte, MinBufferSize)
	to := counting{b.conn, b.c.FromWS}
	for {
		mt, r, err := b.ws.NextReader()
		if err != nil {
			select {
			case <-b.stop:
				return nil // closed by us after both ends finished or a failure up reports
			default:
			}
			if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) || b.bothEnded() {
				return nil
			}
			return err
		}
		b.extend()
		switch mt {
		case websocket.BinaryMessage:
			for {
				n, rerr := r.Read(buf)
				if n > 0 {
					if _, err := to.Write(buf[:n]); err != nil {
						b.closeAll(websocket.CloseInternalServerErr, "write to socket failed")
						return err
					}
					buf = grow(buf, n)
				}
				if rerr == io.EOF {
					break
				}
				if rerr != nil {
					break // NextReader reports the WebSocket's failure
				}
			}
		case websocket.TextMessage:
			var m Control
			raw, err := io.ReadAll(io.LimitReader(r, 4096))
			if err != nil {
				return err
			}
			if json.Unmarshal(raw, &m) == nil && m.Type == CloseWrite {
				if cw, ok := b.conn.(closeWriter); ok {
					_ = cw.CloseWrite()
				}
				b.mu.Lock()
				b.gotEOF = true
				done := b.sentEOF
				b.mu.Unlock()
				if done {
					b.closeAll(websocket.CloseNormalClosure, "")
					return nil
				}
			}
		}
	}
}

// up copies socket → WebSocket; the only data writer on ws.
func (b *bridge) up() error {
	buf := make([]byte, MinBufferSize)
	for {
		n, err := b.conn.Read(buf)
		if n > 0 {
			if werr := b.ws.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
				b.closeAll(websocket.CloseNormalClosure, "")
				return nil // the WebSocket side ended; down reports why
			}
			if b.c.ToWS != nil {
				b.c.ToWS(n)
			}
			buf = grow(buf, n)
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			if werr := b.ws.WriteMessage(websocket.TextMessage, closeWriteFrame); werr != nil {
				return nil
			}
			b.mu.Lock()
			b.sentEOF = true
			done := b.gotEOF
			b.mu.Unlock()
			if done {
				b.closeAll(websocket.CloseNormalClosure, "")
			}
			return nil
		}
		select {
		case <-b.stop:
			return nil // closed by us
		default:
		}
		b.closeAll(websocket.CloseInternalServerErr, "read from socket failed")
		return err
	}
}

func (b *bridge) pinger() {
	t := time.NewTicker(b.ping)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			if b.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(b.ping)) != nil {
				return
			}
		}
	}
}

func (b *bridge) bothEnded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sentEOF && b.gotEOF
}

// closeAll sends a close frame (best effort) and closes both connections.
func (b *bridge) closeAll(code int, reason string) {
	b.closeOnce.Do(func() {
		close(b.stop)
		_ = b.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
		_ = b.ws.Close()
		_ = b.conn.Close()
	})
}

// Cut closes ws with 1000 and reason (a deleted session) without a bridge.
func Cut(ws *websocket.Conn, reason string) {
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, reason), time.Now().Add(time.Second))
	_ = ws.Close()
}

type counting struct {
	w  io.Writer
	fn func(int)
}

func (c counting) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.fn != nil && n > 0 {
		c.fn(n)
	}
	return n, err
}
