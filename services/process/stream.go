package process

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gofiber/fiber/v3"

	"deckhand/platform/fault"
	"deckhand/services/process/outlog"
)

const (
	// followRead is the most a follower takes from the log at once.
	followRead = 1 << 20
	// keepAlive: an idle SSE stream gets a comment this often, an idle
	// WebSocket a ping, so a vanished client is noticed.
	keepAlive = 15 * time.Second
	// stallLimit: a client that takes nothing for this long is dropped
	// (its place is then kept for the resume grace only).
	stallLimit = 60 * time.Second
	// binaryPrefix: stream (1) and offset (8, big-endian) before a binary
	// frame's bytes.
	binaryPrefix = 9
	// maxClientMessage bounds a message a WebSocket client sends (input).
	maxClientMessage = 1 << 20
)

// follower reads a process's output for one stream, holding its place.
type follower struct {
	p    *process
	c    *outlog.Cursor
	h    *outlog.Hold
	held int64 // bytes at the cursor left for later (an incomplete character)
}

func (s *Service) follow(p *process, since int64) *follower {
	return &follower{p: p, c: p.log.Cursor(since), h: p.log.AddHold(since)}
}

func (f *follower) close() {
	f.p.log.ReleaseHold(f.h)
	f.c.Close()
}

// sent moves the follower's place past what it has written out.
func (f *follower) sent() { f.p.log.MoveHold(f.h, f.c.Pos) }

// step kinds.
const (
	stepData = iota
	stepEnd
	stepTick
	stepStop
)

// step waits for output (as pieces, or with text as chunks), the end, a
// tick or stop.
func (f *follower) step(stop <-chan struct{}, tick <-chan time.Time, text bool) (kind int, pieces []outlog.Chunk, chunks []Chunk, gap *Gap) {
	for {
		var done bool
		var wait <-chan struct{}
		switch {
		case f.held > 0:
			// An incomplete character waits for its rest.
			if wait = f.c.WaitMore(f.c.Pos + f.held); wait == nil {
				f.held = 0
				continue
			}
		case text:
			chunks, gap, done, wait, f.held = readText(f.c, followRead)
			if len(chunks) > 0 || gap != nil {
				return stepData, nil, chunks, gap
			}
			if f.held > 0 {
				continue
			}
		default:
			var g *outlog.Gap
			pieces, g, done, wait = f.c.Next(followRead)
			gap = gapOf(g)
			if len(pieces) > 0 || gap != nil {
				return stepData, pieces, nil, gap
			}
		}
		if done {
			// Output complete: only the record's end or stop is left.
			wait, tick = f.p.done, nil
		}
		select {
		case <-wait:
			if done {
				return stepEnd, nil, nil, nil
			}
		case <-tick:
			return stepTick, nil, nil, nil
		case <-stop:
			return stepStop, nil, nil, nil
		}
	}
}

// serveSSE streams output as Server-Sent Events: output events (id: the
// offset after them, for Last-Event-ID), gap events, and one end event.
func (s *Service) serveSSE(c fiber.Ctx, p *process, since int64) error {
	conn := c.RequestCtx().Conn()
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	f := s.follow(p, since)
	c.RequestCtx().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer f.close()
		tick := time.NewTicker(keepAlive)
		defer tick.Stop()
		var buf []byte
		for {
			kind, _, chunks, gap := f.step(s.ctx.Done(), tick.C, true)
			buf = buf[:0]
			switch kind {
			case stepStop:
				return
			case stepTick:
				buf = append(buf, ": keep-alive\n\n"...)
			case stepEnd:
				buf = sseEvent(buf, "end", "", End{Type: "end", Process: p.snapshot()})
			case stepData:
				if gap != nil {
					buf = sseEvent(buf, "gap", "", gap)
				}
				for _, ch := range chunks {
					buf = sseEvent(buf, "output", strconv.FormatInt(ch.end, 10), ch)
				}
			}
			_ = conn.SetWriteDeadline(time.Now().Add(stallLimit))
			if _, err := w.Write(buf); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
			f.sent()
			if kind == stepEnd {
				return
			}
		}
	})
	return nil
}

func sseEvent(buf []byte, event, id string, v any) []byte {
	if id != "" {
		buf = append(buf, "id: "...)
		buf = append(buf, id...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "event: "...)
	buf = append(buf, event...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, marshal(v)...)
	return append(buf, "\n\n"...)
}

// marshal is JSON without HTML escaping: output is mostly text, where
// escaping <, > and & would only make it longer.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// isUpgrade reports a WebSocket handshake.
func isUpgrade(c fiber.Ctx) bool {
	return strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket")
}

// acceptKey is RFC 6455's Sec-WebSocket-Accept for key.
func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// serveWS answers the handshake and runs the session on the hijacked
// connection. Every refusal comes before it, as an ordinary answer.
func (s *Service) serveWS(c fiber.Ctx, p *process, since int64, binaryFrames, follow bool) error {
	key := c.Get("Sec-WebSocket-Key")
	if c.Get("Sec-WebSocket-Version") != "13" || key == "" || !strings.Contains(strings.ToLower(c.Get(fiber.HeaderConnection)), "upgrade") {
		return fault.Errorf(fault.CodeBadRequest, "WebSocket handshake: needs Connection: Upgrade, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key")
	}
	rc := c.RequestCtx()
	rc.SetStatusCode(fiber.StatusSwitchingProtocols)
	rc.Response.Header.Set(fiber.HeaderUpgrade, "websocket")
	rc.Response.Header.Set(fiber.HeaderConnection, "Upgrade")
	rc.Response.Header.Set("Sec-WebSocket-Accept", acceptKey(key))
	rc.Hijack(func(conn net.Conn) { s.wsSession(conn, p, since, binaryFrames, follow) })
	return nil
}

// wsConn writes frames on the socket under one lock.
type wsConn struct {
	raw    net.Conn             // the hijacked connection: reads (it holds what fasthttp buffered)
	sock   net.Conn             // the socket itself: writes, one writev per frame
	writev func([][]byte) error // raw writes to sock (rawio_linux.go), nil: sock's own
	wmu    sync.Mutex
}

func (w *wsConn) write(op ws.OpCode, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var hb bytes.Buffer
	_ = ws.WriteHeader(&hb, ws.Header{Fin: true, OpCode: op, Length: int64(n)})
	bufs := append(net.Buffers{hb.Bytes()}, parts...)
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_ = w.sock.SetWriteDeadline(time.Now().Add(stallLimit))
	if w.writev != nil {
		return w.writev(bufs)
	}
	_, err := bufs.WriteTo(w.sock)
	return err
}

func (w *wsConn) json(v any) error { return w.write(ws.OpText, marshal(v)) }

func (w *wsConn) closeWith(code ws.StatusCode, reason string) {
	_ = w.write(ws.OpClose, ws.NewCloseFrameBody(code, reason))
}

// socketOf is the socket under fasthttp's hijacked connection.
func socketOf(c net.Conn) net.Conn {
	if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
		if inner := u.UnsafeConn(); inner != nil {
			return inner
		}
	}
	return c
}

// wsControl is a client's text message.
type wsControl struct {
	Type   string      `json:"type"`
	Rows   int         `json:"rows"`
	Cols   int         `json:"cols"`
	Signal SignalValue `json:"signal"`
}

type wsError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wsSession streams output until the end (then closes with 1000) and
// takes the client's input and control messages meanwhile.
func (s *Service) wsSession(raw net.Conn, p *process, since int64, binaryFrames, follow bool) {
	_ = raw.SetDeadline(time.Time{})
	w := &wsConn{raw: raw, sock: socketOf(raw)}
	w.writev = rawWritev(w.sock)
	f := s.follow(p, since)
	defer f.close()
	// stop: the client went or the service stops.
	ctx, stop := context.WithCancel(s.ctx)
	defer stop()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		defer stop()
		s.wsRead(w, p)
	}()
	defer func() {
		_ = raw.Close()
		<-gone
	}()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var prefix [binaryPrefix]byte
	for {
		kind, pieces, chunks, gap := f.step(ctx.Done(), tick.C, !binaryFrames)
		var err error
		switch kind {
		case stepStop:
			w.closeWith(ws.StatusGoingAway, "stopping")
			return
		case stepTick:
			err = w.write(ws.OpPing, nil)
		case stepEnd:
			if err = w.json(End{Type: "end", Process: p.snapshot()}); err == nil {
				w.closeWith(ws.StatusNormalClosure, "")
			}
		case stepData:
			if gap != nil {
				err = w.json(gap)
			}
			for _, pc := range pieces {
				if err != nil {
					break
				}
				prefix[0] = pc.Stream
				binary.BigEndian.PutUint64(prefix[1:], uint64(pc.Off))
				err = w.write(ws.OpBinary, prefix[:], pc.Data)
			}
			for _, ch := range chunks {
				if err != nil {
					break
				}
				err = w.json(ch)
			}
			if err == nil && !follow && f.c.CaughtUp() {
				// Caught up and not following: done.
				f.sent()
				w.closeWith(ws.StatusNormalClosure, "")
				kind = stepEnd
			}
		}
		if err != nil {
			return
		}
		f.sent()
		if kind == stepEnd {
			// The client answers the close; give it a moment.
			select {
			case <-gone:
			case <-time.After(time.Second):
			}
			return
		}
	}
}

// wsRead takes the client's frames: binary ones are input, text ones
// control messages (stdin_close, resize, signal); it answers pings and
// returns when the client closes or goes silent.
func (s *Service) wsRead(w *wsConn, p *process) {
	br := bufio.NewReaderSize(w.raw, 16<<10)
	var msg []byte
	var msgOp ws.OpCode
	for {
		_ = w.raw.SetReadDeadline(time.Now().Add(keepAlive * 5 / 2))
		h, err := ws.ReadHeader(br)
		if err != nil || h.Length > maxClientMessage || (h.OpCode.IsControl() && h.Length > 125) {
			return
		}
		payload := make([]byte, h.Length)
		if _, err := io.ReadFull(br, payload); err != nil {
			return
		}
		if h.Masked {
			ws.Cipher(payload, h.Mask, 0)
		}
		switch {
		case h.OpCode == ws.OpClose:
			w.closeWith(ws.StatusNormalClosure, "")
			return
		case h.OpCode == ws.OpPing:
			_ = w.write(ws.OpPong, payload)
			continue
		case h.OpCode == ws.OpPong:
			continue
		case h.OpCode == ws.OpContinuation:
			msg = append(msg, payload...)
		default:
			msgOp, msg = h.OpCode, payload
		}
		if len(msg) > maxClientMessage {
			return
		}
		if !h.Fin {
			continue
		}
		s.wsMessage(w, p, msgOp, msg)
		msg = nil
	}
}

func (s *Service) wsMessage(w *wsConn, p *process, op ws.OpCode, msg []byte) {
	ctx := context.Background()
	var err error
	if op == ws.OpBinary {
		_, err = s.WriteStdin(ctx, StdinInput{ID: p.id, bytes: msg})
	} else {
		var m wsControl
		if json.Unmarshal(msg, &m) != nil {
			_ = w.json(wsError{Type: "error", Message: `malformed control message: expected JSON such as {"type":"signal","signal":"INT"}`})
			return
		}
		switch m.Type {
		case "stdin_close":
			_, err = s.CloseStdin(ctx, IDInput{ID: p.id})
		case "resize":
			in := ResizeInput{ID: p.id, PTYSize: PTYSize{Rows: m.Rows, Cols: m.Cols}}
			if err = in.Validate(); err == nil {
				_, err = s.Resize(ctx, in)
			}
		case "signal":
			in := SignalInput{ID: p.id, Signal: m.Signal}
			if err = in.Validate(); err == nil {
				_, err = s.Signal(ctx, in)
			}
		default:
			err = fault.Invalid("type", "unknown control message type %q (known: stdin_close, resize, signal)", m.Type)
		}
	}
	if err != nil {
		var pe *fault.Error
		msg := "internal error"
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		_ = w.json(wsError{Type: "error", Message: msg})
	}
}
