package deckhand

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"

	"github.com/gorilla/websocket"
)

// TerminalOptions choose the terminal Attach opens.
type TerminalOptions struct {
	// ID attaches to an existing session; empty starts a new shell.
	ID         string
	Cols, Rows int    // size (0: the service's default)
	Shell, Cwd string // of a new session
}

// Terminal is one attached terminal session: Read gives the PTY's output
// (the scrollback first), Write types into it. It is an io.ReadWriteCloser;
// Read answers io.EOF once the shell has ended (ExitCode then says how)
// or the connection closed.
type Terminal struct {
	conn *websocket.Conn
	wmu  sync.Mutex

	buf       []byte
	exitCode  *int
	readErr   error
	stopWatch func() bool // of ctx, which closes the terminal once cancelled
}

// Terminal opens a terminal session (Attach).
func (c *Container) Terminal(ctx context.Context, o TerminalOptions) (*Terminal, error) {
	return c.Attach(ctx, o)
}

// Attach opens a terminal session over the terminal service's WebSocket.
// ctx bounds the handshake and, once cancelled, closes the terminal.
func (c *Container) Attach(ctx context.Context, o TerminalOptions) (*Terminal, error) {
	q := url.Values{}
	if o.ID != "" {
		q.Set("id", o.ID)
	}
	if o.Cols > 0 && o.Rows > 0 {
		q.Set("cols", strconv.Itoa(o.Cols))
		q.Set("rows", strconv.Itoa(o.Rows))
	}
	if o.Shell != "" {
		q.Set("shell", o.Shell)
	}
	if o.Cwd != "" {
		q.Set("cwd", o.Cwd)
	}
	conn, err := c.dialWS(ctx, "terminal", "/api/v1/terminal/ws", q, 0)
	if err != nil {
		return nil, err
	}
	t := &Terminal{conn: conn}
	t.stopWatch = context.AfterFunc(ctx, func() { _ = t.detach() })
	return t, nil
}

// Read reads the PTY's output.
func (t *Terminal) Read(p []byte) (int, error) {
	for len(t.buf) == 0 {
		if t.readErr != nil {
			return 0, t.readErr
		}
		mt, data, err := t.conn.ReadMessage()
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseNormalClosure) || errors.Is(err, net.ErrClosed) {
				err = io.EOF
			}
			t.readErr = err
			continue
		}
		switch mt {
		case websocket.BinaryMessage:
			t.buf = data
		case websocket.TextMessage:
			var m struct {
				Type    string `json:"type"`
				Code    *int   `json:"code"`
				Message string `json:"message"`
			}
			if json.Unmarshal(data, &m) == nil && m.Type == "exit" {
				t.exitCode = m.Code
				t.readErr = io.EOF
			}
		}
	}
	n := copy(p, t.buf)
	t.buf = t.buf[n:]
	return n, nil
}

// Write types p into the terminal.
func (t *Terminal) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := t.conn.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize sets the terminal's size.
func (t *Terminal) Resize(cols, rows int) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.conn.WriteJSON(map[string]any{"type": "resize", "cols": cols, "rows": rows})
}

// ExitCode is the shell's exit code once Read has answered io.EOF for
// its end (128+N for signal N); nil before, or when the connection ended
// first.
func (t *Terminal) ExitCode() *int { return t.exitCode }

// Close detaches (the session goes on until its shell ends or it is
// deleted).
func (t *Terminal) Close() error {
	t.stopWatch()
	return t.detach()
}

// detach sends the close frame and closes the connection.
func (t *Terminal) detach() error {
	t.wmu.Lock()
	_ = t.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	t.wmu.Unlock()
	return t.conn.Close()
}
