package deckhand

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/deckhand-dev/deckhand/sdk/go/api/process"
)

// Signal sends signal (a name: TERM, INT, HUP, KILL ...; or a number) to
// the process's whole process group.
func (c *Container) Signal(ctx context.Context, id, signal string) error {
	return c.Call(ctx, http.MethodPost, "process", "/api/v1/process/"+url.PathEscape(id)+"/signal", nil,
		map[string]string{"signal": signal}, nil)
}

// Resize sets the rows and cols of the process's pseudo-terminal (an
// *Error, 409, for a process without one).
func (c *Container) Resize(ctx context.Context, id string, rows, cols int) error {
	return c.Call(ctx, http.MethodPost, "process", "/api/v1/process/"+url.PathEscape(id)+"/resize", nil,
		map[string]int{"rows": rows, "cols": cols}, nil)
}

// StartRetrying is Start, tried again while the agent cannot be reached
// (no answer at all: refused, reset, a timeout) for up to retryFor. It
// gives in a ClientToken when it has none, so a retry after an answer
// that was lost on the way starts nothing twice; an answer, even an error
// one, is final.
func (c *Container) StartRetrying(ctx context.Context, in process.StartInput, retryFor time.Duration) (*process.Process, error) {
	if in.ClientToken == nil || *in.ClientToken == "" {
		tok := newClientToken()
		in.ClientToken = &tok
	}
	var p *process.Process
	err := Retry(ctx, retryFor, func() (err error) {
		p, err = c.Start(ctx, in)
		return err
	})
	return p, err
}

// Retry calls fn, and again (every 50 ms to 1 s) while its error says the
// service could not be reached at all (no answer: refused, reset, a
// timeout), for up to retryFor; an answer, even an error one, is final.
// Only for calls that are safe to repeat when an answer was lost on the
// way.
func Retry(ctx context.Context, retryFor time.Duration, fn func() error) error {
	var down time.Time
	for n := 1; ; n++ {
		err := fn()
		if err == nil || !unreachable(err) || ctx.Err() != nil {
			return err
		}
		if down.IsZero() {
			down = time.Now()
		}
		if time.Since(down) > retryFor {
			return fmt.Errorf("deckhand: unreachable for %s: %w", retryFor, err)
		}
		if err := sleepCtx(ctx, reconnectWait(n)); err != nil {
			return err
		}
	}
}

func newClientToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "sdk-" + hex.EncodeToString(b[:])
}

// unreachable: the request got no answer (the transport failed), as
// opposed to an answer or a local mistake.
func unreachable(err error) bool {
	var ue *url.Error
	var ne net.Error
	var apiErr *Error
	return !errors.As(err, &apiErr) && (errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF))
}

// reconnectWait is the wait before the n-th try in a row of a time-bound
// retry (ReconnectFor): 50 ms doubling to 1 s, so a restarted agent is
// found again within a second.
func reconnectWait(n int) time.Duration {
	if n > 5 {
		return time.Second
	}
	return min(50*time.Millisecond<<(n-1), time.Second)
}

// dialWS opens a WebSocket to service's path with the handle's token (as
// the bearer, and as the cookie when the handle has one) and its route
// (the platform proxy's address when set).
func (c *Container) dialWS(ctx context.Context, service, path string, q url.Values, readBuffer int) (*websocket.Conn, error) {
	req, err := c.request(ctx, http.MethodGet, service, path, q, nil)
	if err != nil {
		return nil, err
	}
	u := "ws" + strings.TrimPrefix(req.URL.String(), "http")
	h := http.Header{}
	tok, err := c.agentToken(ctx)
	if err != nil {
		return nil, err
	}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
		if c.cookie != "" {
			h.Set("Cookie", (&http.Cookie{Name: c.cookie, Value: tok}).String())
		}
	}
	d := websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 30 * time.Second, ReadBufferSize: readBuffer}
	if c.proxyAddr != "" && c.base == "" && c.route != RouteAgentAddr {
		nd := &net.Dialer{Timeout: 30 * time.Second}
		d.NetDialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return nd.DialContext(ctx, network, c.proxyAddr)
		}
	}
	conn, resp, err := d.DialContext(ctx, u, h)
	if err != nil {
		if resp != nil {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			return nil, errorOf(http.MethodGet, path, resp.StatusCode, raw)
		}
		return nil, err
	}
	return conn, nil
}

// followWS reads one WebSocket connection of the output route with binary
// frames (one byte stream, eight bytes offset, the bytes), moving *off
// past each piece delivered; gap and end come as text frames.
func (c *Container) followWS(ctx context.Context, id string, off *int64, o StreamOptions, fn func(Output) error) (*process.Process, error) {
	path := "/api/v1/process/" + url.PathEscape(id) + "/output"
	conn, err := c.dialWS(ctx, "process", path, url.Values{"since": {strconv.FormatInt(*off, 10)}, "binary": {"true"}}, 256<<10)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	// The service pings every 15 s; silence for three is a dead link.
	const silent = 45 * time.Second
	_ = conn.SetReadDeadline(time.Now().Add(silent))
	conn.SetPingHandler(func(data string) error {
		_ = conn.SetReadDeadline(time.Now().Add(silent))
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	var buf bytes.Buffer
	for {
		mt, r, err := conn.NextReader()
		if err != nil {
			return nil, err
		}
		_ = conn.SetReadDeadline(time.Now().Add(silent))
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return nil, err
		}
		b := buf.Bytes()
		if mt == websocket.BinaryMessage {
			if len(b) < 9 {
				return nil, errors.New("deckhand: malformed output frame")
			}
			piece := Output{Stream: "stdout", Offset: int64(binary.BigEndian.Uint64(b[1:9])), Data: b[9:]}
			if b[0] == 2 {
				piece.Stream = "stderr"
			}
			if err := deliverPiece(piece, off, fn); err != nil {
				return nil, err
			}
			continue
		}
		var m struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("deckhand: unreadable output message: %w", err)
		}
		switch m.Type {
		case "output", "gap", "end":
			end, err := deliver(m.Type, string(b), off, o, fn)
			if err != nil || end != nil {
				return end, err
			}
		}
	}
}

// deliverPiece hands fn the part of piece past *off (a reconnect may
// repeat what was delivered) and moves *off past it.
func deliverPiece(piece Output, off *int64, fn func(Output) error) error {
	next := piece.Offset + int64(len(piece.Data))
	if next <= *off {
		return nil
	}
	if skip := *off - piece.Offset; skip > 0 {
		piece.Data, piece.Offset = piece.Data[skip:], *off
	}
	if piece.Offset > *off {
		return fmt.Errorf("deckhand: output at offset %d, expected %d", piece.Offset, *off)
	}
	if err := fn(piece); err != nil {
		return callbackError{err}
	}
	*off = next
	return nil
}

// decodeChunk is a text chunk's bytes.
func decodeChunk(ch process.Chunk) ([]byte, error) {
	if ch.Encoding != nil && *ch.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(ch.Data)
		if err != nil {
			return nil, fmt.Errorf("deckhand: output event: bad base64: %w", err)
		}
		return b, nil
	}
	return []byte(ch.Data), nil
}

// NewService builds a handle of one service of a container reached at its
// own address (serviceURL, e.g. http://127.0.0.1:7715 for a `deckhand
// service process` run alone) rather than through a gateway: its calls
// to that service go there.
func NewService(service, serviceURL string, o Options) (*Container, error) {
	u, err := url.Parse(strings.TrimSpace(serviceURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("deckhand: %s service URL %q: must be http:// or https:// with a host", service, serviceURL)
	}
	c, err := NewContainer(u.Scheme+"://"+u.Host, o)
	if err != nil {
		return nil, err
	}
	c.own = map[string]string{service: strings.TrimRight(u.String(), "/")}
	return c, nil
}
