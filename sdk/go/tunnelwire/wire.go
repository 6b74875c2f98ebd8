// Package tunnelwire is the tunnel's WebSocket protocol, shared by the service
// (bridging to a port in the container) and the `deckhand tunnel` client
// (bridging a connection accepted on the user's machine):
//
//   - binary frames carry the stream's bytes, in order, both ways; frame
//     boundaries mean nothing (a receiver treats fragments and continuation
//     frames alike);
//   - a text frame {"type":"close_write"} says the sender's side reached end
//     of stream (TCP half-close, FIN): the receiver shuts down writing on
//     its socket and keeps reading, so `ssh host cmd <file` and HTTP/1.0
//     style "send, half-close, read the answer" work;
//   - when both directions have ended, either end closes with 1000; an
//     error closes with 1011 and the reason; a session cut by the service
//     (DELETE .../sessions/{id}) closes with 1000 "session deleted";
//   - each end pings every interval and cuts a peer silent for two (a
//     laptop that slept, a dropped network).
//
// The frames are RFC 6455's, read and written here with gobwas/ws's frame
// API rather than through a message-level library, so that on Linux the
// unmasked direction (service → client) moves payloads with splice(2):
// socket → pipe → socket inside the kernel, never copied through either
// process. The masked direction (client → service) must pass through user
// space on both ends, since every byte is XORed with the frame's mask
// (RFC 6455 5.3 requires clients to mask, to protect intermediaries from
// script-chosen bytes).
package tunnelwire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gobwas/ws"
)

// BufferSize is the largest chunk an end sends as one frame (one TCP read
// or one splice = one frame): a bulk transfer moves 1 MiB per system call,
// which costs about 20% less CPU per byte than 128 KiB (BenchmarkBridge).
// Copy buffers start at MinBufferSize and grow to it once a read fills
// one, so an idle or interactive tunnel holds 64 KiB, not 1 MiB, a way.
const BufferSize = 1 << 20

// MinBufferSize is a copy buffer's starting size.
const MinBufferSize = 64 << 10

// headerBufferSize is the frame reader's buffer: frame headers, control
// frames and small payloads come through it in one read; a larger payload
// is read (or spliced) straight from the socket past it.
const headerBufferSize = 16 << 10

// maxText bounds a text (control) message.
const maxText = 4096

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

// Close codes the bridge sends.
const (
	closeNormal   = int(ws.StatusNormalClosure)
	closeInternal = int(ws.StatusInternalServerError)
)

// Counters receive the bytes copied each way; either may be nil.
type Counters struct {
	// FromWS counts bytes written to the socket (received over WebSocket).
	FromWS func(n int)
	// ToWS counts bytes read from the socket and sent over WebSocket.
	ToWS func(n int)
}

func (c Counters) fromWS(n int) {
	if c.FromWS != nil && n > 0 {
		c.FromWS(n)
	}
}

func (c Counters) toWS(n int) {
	if c.ToWS != nil && n > 0 {
		c.ToWS(n)
	}
}

// Conn is one end of a tunnel WebSocket after its handshake.
type Conn struct {
	raw    net.Conn
	sock   net.Conn      // raw's socket, for splicing writes (raw itself when it is one)
	rd     *bufio.Reader // frames, over leftovers then raw
	src    *leftovers
	client bool          // this end masks what it sends
	wmu    chan struct{} // one frame at a time on raw; a channel so closing can give up waiting
}

// Server wraps the connection an upgrade hijacked (the upgrader refused
// a client that sent bytes before the handshake ended, so none are
// buffered). socket, when not nil, is the socket under raw — a hijack
// through an adaptor hands over a wrapper without the socket's system
// calls — and frames are spliced into it; raw still reads and closes.
func Server(raw, socket net.Conn) *Conn {
	c := newConn(raw, nil, false)
	if socket != nil {
		c.sock = socket
	}
	return c
}

// Client wraps a dialled connection; br is what the handshake read past
// the response (gobwas/ws returns it non-nil only when it holds bytes).
func Client(raw net.Conn, br *bufio.Reader) *Conn {
	var rest []byte
	if br != nil && br.Buffered() > 0 {
		rest, _ = br.Peek(br.Buffered())
		rest = append([]byte(nil), rest...)
	}
	return newConn(raw, rest, true)
}

func newConn(raw net.Conn, buffered []byte, client bool) *Conn {
	src := &leftovers{rest: buffered, raw: raw}
	return &Conn{raw: raw, sock: raw, src: src, rd: bufio.NewReaderSize(src, headerBufferSize), client: client, wmu: make(chan struct{}, 1)}
}

// leftovers reads the bytes a handshake buffered, then the connection.
type leftovers struct {
	rest []byte
	raw  net.Conn
}

func (l *leftovers) Read(p []byte) (int, error) {
	if len(l.rest) > 0 {
		n := copy(p, l.rest)
		l.rest = l.rest[n:]
		return n, nil
	}
	return l.raw.Read(p)
}

// lock takes the write lock, giving up after wait (0: wait as long as it takes).
func (c *Conn) lock(wait time.Duration) bool {
	if wait <= 0 {
		c.wmu <- struct{}{}
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case c.wmu <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

func (c *Conn) unlock() { <-c.wmu }

// header is the header of a final frame of op carrying n bytes, masked
// with a fresh key when this end is a client.
func (c *Conn) header(op ws.OpCode, n int) ws.Header {
	h := ws.Header{Fin: true, OpCode: op, Length: int64(n)}
	if c.client {
		h.Masked = true
		h.Mask = ws.NewMask() // math/rand's OS-seeded ChaCha8: unpredictable, as RFC 6455 5.3 asks
	}
	return h
}

// encodeHeader writes h into a small buffer, for one writev with the payload.
func encodeHeader(h ws.Header) []byte {
	b := bytes.NewBuffer(make([]byte, 0, ws.MaxHeaderSize))
	_ = ws.WriteHeader(b, h)
	return b.Bytes()
}

// writeFrame sends one frame; payload is masked in place on a client.
// The caller holds the write lock.
func (c *Conn) writeFrame(op ws.OpCode, payload []byte) error {
	h := c.header(op, len(payload))
	if h.Masked {
		ws.Cipher(payload, h.Mask, 0)
	}
	bufs := net.Buffers{encodeHeader(h), payload}
	_, err := bufs.WriteTo(c.raw)
	return err
}

// WriteControl sends a control frame (close, ping, pong) within wait.
func (c *Conn) WriteControl(op ws.OpCode, payload []byte, wait time.Duration) error {
	if !c.lock(wait) {
		return errWriteBusy
	}
	defer c.unlock()
	_ = c.raw.SetWriteDeadline(time.Now().Add(wait))
	defer func() { _ = c.raw.SetWriteDeadline(time.Time{}) }()
	return c.writeFrame(op, append([]byte(nil), payload...))
}

// WriteMessage sends one final data frame (p is masked in place on a client).
func (c *Conn) WriteMessage(op ws.OpCode, p []byte) error {
	c.lock(0)
	defer c.unlock()
	return c.writeFrame(op, p)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.raw.Close() }

// Cut closes c with 1000 and reason (a deleted session) without a bridge.
func Cut(c *Conn, reason string) {
	_ = c.WriteControl(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, reason), time.Second)
	_ = c.Close()
}

// CloseError is the peer's close frame.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return "websocket: closed by the peer: " + strconv.Itoa(e.Code) + " " + e.Reason
}

// errWriteBusy: a control frame waited its time for the write lock.
var errWriteBusy = errors.New("websocket: timed out waiting to write a control frame")

// errProtocol is a frame this end must not accept (RFC 6455 5.1, 5.2, 5.5).
var errProtocol = errors.New("websocket: protocol error")

// Bridge copies between c and conn until both directions have ended or
// either side fails, then closes both. It returns nil after a clean end
// (both half-closes, or the peer's close 1000) and the failure otherwise.
func Bridge(c *Conn, conn net.Conn, ping time.Duration, counters Counters) error {
	b := &bridge{ws: c, conn: conn, ping: ping, c: counters, stop: make(chan struct{})}
	return b.run()
}

type bridge struct {
	ws   *Conn
	conn net.Conn
	ping time.Duration
	c    Counters

	mu              sync.Mutex
	sentEOF, gotEOF bool
	closeOnce       sync.Once
	stop            chan struct{}

	downPipe *pipe // splices WebSocket → socket; made on first use
}

func (b *bridge) run() error {
	b.extend()
	defer func() {
		if b.downPipe != nil {
			b.downPipe.close()
		}
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	upErr := make(chan error, 1)
	go func() { defer wg.Done(); upErr <- b.up() }()
	go func() { defer wg.Done(); b.pinger() }()
	downErr := b.down()
	// The socket side is done (or the WebSocket failed): make sure the
	// other goroutines end too.
	b.closeAll(closeNormal, "")
	wg.Wait()
	up := <-upErr
	if downErr != nil {
		return downErr
	}
	return up
}

// extend pushes the read deadline two ping intervals out.
func (b *bridge) extend() { _ = b.ws.raw.SetReadDeadline(time.Now().Add(2 * b.ping)) }

// down copies WebSocket → socket, and answers the peer's control frames.
func (b *bridge) down() error {
	buf := make([]byte, MinBufferSize)
	var text []byte
	inText := false // a fragmented text message is being read
	for {
		h, err := ws.ReadHeader(b.ws.rd)
		if err != nil {
			return b.ended(err)
		}
		if err := b.checkHeader(h); err != nil {
			return err
		}
		b.extend()
		switch {
		case h.OpCode.IsControl():
			done, err := b.control(h)
			if done || err != nil {
				return b.ended(err)
			}
		case h.OpCode == ws.OpText || (h.OpCode == ws.OpContinuation && inText):
			if int64(len(text))+h.Length > maxText {
				b.closeAll(int(ws.StatusMessageTooBig), "control message over 4096 bytes")
				return errProtocol
			}
			p := make([]byte, h.Length)
			if _, err := io.ReadFull(b.ws.rd, p); err != nil {
				return b.ended(err)
			}
			if h.Masked {
				ws.Cipher(p, h.Mask, 0)
			}
			text = append(text, p...)
			if inText = !h.Fin; inText {
				continue
			}
			if b.controlMessage(text) {
				return nil
			}
			text = text[:0]
		default: // binary, or a continuation of binary
			var werr error
			buf, werr, err = b.payload(h, buf)
			if werr != nil {
				b.closeAll(closeInternal, "write to socket failed")
				return werr
			}
			if err != nil {
				return b.ended(err)
			}
		}
	}
}

// checkHeader refuses what RFC 6455 forbids here: reserved bits (no
// extension was agreed), reserved opcodes, unmasked frames to the service,
// masked ones to the client, fragmented or long control frames.
func (b *bridge) checkHeader(h ws.Header) error {
	bad := h.Rsv != 0 || h.OpCode.IsReserved() || h.Masked == b.ws.client || h.Length < 0 ||
		h.OpCode.IsControl() && (!h.Fin || h.Length > 125)
	if bad {
		b.closeAll(int(ws.StatusProtocolError), "protocol error")
		return errProtocol
	}
	return nil
}

// control handles a ping, pong or close; done reports the peer's close.
func (b *bridge) control(h ws.Header) (done bool, err error) {
	p := make([]byte, h.Length)
	if _, err := io.ReadFull(b.ws.rd, p); err != nil {
		return false, err
	}
	if h.Masked {
		ws.Cipher(p, h.Mask, 0)
	}
	switch h.OpCode {
	case ws.OpPing:
		err := b.ws.WriteControl(ws.OpPong, p, time.Second)
		if errors.Is(err, errWriteBusy) {
			return false, nil // a long data frame is going out: that shows we live
		}
		select {
		case <-b.stop:
			return false, nil // we are closing; the pong may be refused
		default:
		}
		return false, err
	case ws.OpClose:
		code, reason := ws.ParseCloseFrameData(p)
		echo := code
		if echo == 0 { // no status code: answer 1000
			echo = ws.StatusNormalClosure
		}
		b.closeAll(int(echo), "") // echo the code (RFC 6455 5.5.1)
		if code == ws.StatusNormalClosure || code == ws.StatusGoingAway || code == 0 || b.bothEnded() {
			return true, nil
		}
		return true, &CloseError{Code: int(code), Reason: reason}
	}
	return false, nil // pong: the deadline was extended
}

// controlMessage handles a text message; it reports the end of both ways.
func (b *bridge) controlMessage(raw []byte) (done bool) {
	var m Control
	if json.Unmarshal(raw, &m) != nil || m.Type != CloseWrite {
		return false
	}
	if cw, ok := b.conn.(closeWriter); ok {
		_ = cw.CloseWrite()
	}
	return b.halfClose(&b.gotEOF)
}

// halfClose marks one way's end of stream (eof: gotEOF or sentEOF) and
// closes once both ways have ended, which it reports.
func (b *bridge) halfClose(eof *bool) bool {
	b.mu.Lock()
	*eof = true
	both := b.sentEOF && b.gotEOF
	b.mu.Unlock()
	if both {
		b.closeAll(closeNormal, "")
	}
	return both
}

// payload moves one binary frame's bytes to the socket: spliced when the
// frame is unmasked and both ends are TCP sockets on Linux, else copied
// (and unmasked) through buf. werr is the socket's failure, err the
// WebSocket's.
func (b *bridge) payload(h ws.Header, buf []byte) (_ []byte, werr, err error) {
	left := h.Length
	offset := 0
	for left > 0 {
		// What the frame reader already holds goes first, through user space.
		if n := b.ws.rd.Buffered(); n > 0 || h.Masked || !canSplice(b.ws.raw, b.conn) || len(b.ws.src.rest) > 0 {
			want := min(int64(len(buf)), left)
			if n > 0 {
				want = min(want, int64(n))
			}
			k, rerr := b.ws.rd.Read(buf[:want])
			if k > 0 {
				if h.Masked {
					ws.Cipher(buf[:k], h.Mask, offset)
				}
				offset += k
				left -= int64(k)
				if _, werr := b.conn.Write(buf[:k]); werr != nil {
					return buf, werr, nil
				}
				b.c.fromWS(k)
				buf = grow(buf, k)
			}
			if rerr != nil {
				return buf, nil, rerr // ended() reports an end of stream mid-frame
			}
			continue
		}
		if b.downPipe == nil {
			p, err := newPipe()
			if err != nil {
				return buf, nil, err
			}
			b.downPipe = p
		}
		k, rerr := b.downPipe.fill(b.ws.raw, int(min(left, BufferSize)))
		if k > 0 {
			if werr := b.downPipe.drainFramed(b.conn, nil, k); werr != nil {
				return buf, werr, nil
			}
			left -= int64(k)
			b.c.fromWS(k)
		}
		if rerr != nil {
			return buf, nil, rerr
		}
	}
	return buf, nil, nil
}

// ended turns the reader's failure into Bridge's result.
func (b *bridge) ended(err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-b.stop:
		return nil // closed by us after both ends finished or a failure up reports
	default:
	}
	if b.bothEnded() {
		return nil
	}
	var ce *CloseError
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("websocket: connection closed without a close frame")
	}
	return err
}

// up copies socket → WebSocket.
func (b *bridge) up() error {
	if canSplice(b.conn, b.ws.sock) && !b.ws.client {
		return b.endOfStream(b.spliceUp())
	}
	buf := make([]byte, MinBufferSize)
	for {
		n, err := b.conn.Read(buf)
		if n > 0 {
			if werr := b.ws.WriteMessage(ws.OpBinary, buf[:n]); werr != nil {
				b.closeAll(closeNormal, "")
				return nil // the WebSocket side ended; down reports why
			}
			b.c.toWS(n)
			buf = grow(buf, n)
		}
		if err != nil {
			return b.endOfStream(err)
		}
	}
}

// spliceUp sends the socket's bytes as unmasked frames whose payloads go
// socket → pipe → WebSocket inside the kernel: a header, then the bytes.
func (b *bridge) spliceUp() error {
	p, err := newPipe()
	if err != nil {
		return err
	}
	defer p.close()
	for {
		n, err := p.fill(b.conn, BufferSize)
		if n > 0 {
			b.ws.lock(0)
			werr := p.drainFramed(b.ws.sock, encodeHeader(b.ws.header(ws.OpBinary, n)), n)
			b.ws.unlock()
			if werr != nil {
				b.closeAll(closeNormal, "")
				return errWSEnded
			}
			b.c.toWS(n)
		}
		if err != nil {
			return err
		}
	}
}

// errWSEnded: the WebSocket side failed while sending; down reports why.
var errWSEnded = errors.New("websocket ended")

// endOfStream handles the end of the socket's read side: EOF sends
// close_write; a failure (not our own closing) closes with 1011.
func (b *bridge) endOfStream(err error) error {
	if errors.Is(err, errWSEnded) {
		return nil
	}
	if errors.Is(err, io.EOF) {
		if werr := b.ws.WriteMessage(ws.OpText, append([]byte(nil), closeWriteFrame...)); werr != nil {
			return nil
		}
		b.halfClose(&b.sentEOF)
		return nil
	}
	select {
	case <-b.stop:
		return nil // closed by us
	default:
	}
	b.closeAll(closeInternal, "read from socket failed")
	return err
}

func (b *bridge) pinger() {
	t := time.NewTicker(b.ping)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			if err := b.ws.WriteControl(ws.OpPing, nil, b.ping); err != nil && !errors.Is(err, errWriteBusy) {
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

// closeAll sends a close frame (best effort, within a second) and closes
// both connections, which also ends a splice or write blocked on either.
func (b *bridge) closeAll(code int, reason string) {
	b.closeOnce.Do(func() {
		close(b.stop)
		_ = b.ws.WriteControl(ws.OpClose, ws.NewCloseFrameBody(ws.StatusCode(code), reason), time.Second)
		_ = b.ws.Close()
		_ = b.conn.Close()
	})
}

// closeWriter is a socket that can half-close (*net.TCPConn, *net.UnixConn).
type closeWriter interface{ CloseWrite() error }
