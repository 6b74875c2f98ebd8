// Package client is a Go client of the process service, used by `deckhand
// exec`: start a process (safe to retry with its client_token), follow its
// output over the service's WebSocket and resume after a dropped
// connection from the last offset received, signal it.
package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/services/process"
)

// Client talks to one process service.
type Client struct {
	// URL is the service's base: http://127.0.0.1:7715 for the service
	// itself, or http://127.0.0.1:7700/_/process through the gateway.
	URL string
	// Token, when set, goes as Authorization: Bearer.
	Token string
	// HTTP is the client for plain requests (default: no proxy, no
	// overall timeout).
	HTTP *http.Client
	// ReconnectFor is how long requests and a follow keep retrying while
	// the service cannot be reached (default 60 s).
	ReconnectFor time.Duration
}

// APIError is an error answer of the service.
type APIError struct {
	Status  int
	Code    string `json:"code"`
	Details string `json:"details"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Transport: &http.Transport{Proxy: nil}}
}

func (c *Client) reconnectFor() time.Duration {
	if c.ReconnectFor > 0 {
		return c.ReconnectFor
	}
	return 60 * time.Second
}

func (c *Client) header(h http.Header) http.Header {
	if h == nil {
		h = http.Header{}
	}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	return h
}

// do sends one request and decodes the JSON answer into out; a network
// failure is retried (with backoff) for ReconnectFor, an answer is not.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(c.reconnectFor())
	wait := 50 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+path, bytes.NewReader(raw))
		if err != nil {
			return err
		}
		req.Header = c.header(nil)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.httpClient().Do(req)
		if err != nil {
			if ctx.Err() != nil || time.Now().After(deadline) {
				return err
			}
			if !sleep(ctx, wait) {
				return ctx.Err()
			}
			wait = min(2*wait, time.Second)
			continue
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode >= 300 {
			e := &APIError{Status: resp.StatusCode}
			if json.Unmarshal(data, e) != nil || e.Message == "" {
				e.Message = strings.TrimSpace(string(data))
			}
			return e
		}
		if out != nil {
			return json.Unmarshal(data, out)
		}
		return nil
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Start starts a process. Give in.ClientToken so that the retries after a
// lost answer start nothing twice.
func (c *Client) Start(ctx context.Context, in process.StartInput) (process.Process, error) {
	var p process.Process
	err := c.do(ctx, http.MethodPost, "/api/v1/process", in, &p)
	return p, err
}

// Run runs a process to its end.
func (c *Client) Run(ctx context.Context, in process.RunInput) (process.RunResult, error) {
	var r process.RunResult
	err := c.do(ctx, http.MethodPost, "/api/v1/process/run", in, &r)
	return r, err
}

// Get answers a process's record.
func (c *Client) Get(ctx context.Context, id string) (process.Process, error) {
	var p process.Process
	err := c.do(ctx, http.MethodGet, "/api/v1/process/"+url.PathEscape(id), nil, &p)
	return p, err
}

// Signal sends a signal (TERM, INT, 9 ...) to the process's group.
func (c *Client) Signal(ctx context.Context, id, signal string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/process/"+url.PathEscape(id)+"/signal", map[string]string{"signal": signal}, nil)
}

// WriteStdin writes to the process's standard input.
func (c *Client) WriteStdin(ctx context.Context, id string, data []byte) error {
	return c.do(ctx, http.MethodPost, "/api/v1/process/"+url.PathEscape(id)+"/stdin",
		map[string]string{"data": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}, nil)
}

// CloseStdin closes the process's standard input.
func (c *Client) CloseStdin(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/process/"+url.PathEscape(id)+"/stdin/close", nil, nil)
}

// Output is a piece of output.
type Output struct {
	Stream string // stdout or stderr
	Offset int64
	Data   []byte
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// Text asks for JSON text frames, whose chunks the service cuts at
	// character boundaries, instead of binary frames (the fast path).
	Text bool
	// OnGap is told of output that was no longer kept when asked for.
	OnGap func(from, to int64)
	// OnReconnect is told of each reconnection after a drop.
	OnReconnect func(since int64, err error)
}

// Follow streams the process's output from since to its end, calling out
// with each piece in order, and answers the final record. A dropped
// connection is resumed from the offset after the last piece received,
// retrying for ReconnectFor; an error from out ends the follow.
func (c *Client) Follow(ctx context.Context, id string, since int64, o FollowOptions, out func(Output) error) (process.Process, error) {
	var down time.Time
	wait := 50 * time.Millisecond
	for {
		end, err := c.followOnce(ctx, id, &since, o, out)
		if err == nil {
			return end, nil
		}
		var stop *stopError
		var api *APIError
		switch {
		case errors.As(err, &stop):
			return process.Process{}, stop.err
		case errors.As(err, &api) || ctx.Err() != nil:
			return process.Process{}, err
		}
		if errors.Is(err, errProgress) {
			down, wait = time.Time{}, 50*time.Millisecond
		}
		if down.IsZero() {
			down = time.Now()
		}
		if time.Since(down) > c.reconnectFor() {
			return process.Process{}, fmt.Errorf("output of process %s: connection lost for %s: %w", id, c.reconnectFor(), err)
		}
		if o.OnReconnect != nil {
			o.OnReconnect(since, err)
		}
		if !sleep(ctx, wait) {
			return process.Process{}, ctx.Err()
		}
		wait = min(2*wait, time.Second)
	}
}

// stopError carries an error of the caller's out function.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

// errProgress marks a connection that delivered output before it dropped.
var errProgress = errors.New("connection dropped after progress")

func (c *Client) wsURL(id string, since int64, text bool) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(c.URL, "/") + "/api/v1/process/" + url.PathEscape(id) + "/output")
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	q := url.Values{"since": {strconv.FormatInt(since, 10)}}
	if !text {
		q.Set("binary", "true")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// message is a text frame of the service.
type message struct {
	Type     string          `json:"type"`
	Stream   string          `json:"stream"`
	Offset   int64           `json:"offset"`
	Data     string          `json:"data"`
	Encoding string          `json:"encoding"`
	From     int64           `json:"from"`
	To       int64           `json:"to"`
	Process  process.Process `json:"process"`
	Message  string          `json:"message"`
}

func (c *Client) followOnce(ctx context.Context, id string, since *int64, o FollowOptions, out func(Output) error) (process.Process, error) {
	u, err := c.wsURL(id, *since, o.Text)
	if err != nil {
		return process.Process{}, &stopError{err}
	}
	d := websocket.Dialer{Proxy: nil, HandshakeTimeout: 10 * time.Second, ReadBufferSize: 256 << 10}
	conn, resp, err := d.DialContext(ctx, u, c.header(nil))
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			e := &APIError{Status: resp.StatusCode}
			raw, _ := io.ReadAll(resp.Body)
			if json.Unmarshal(raw, e) != nil || e.Message == "" {
				e.Message = strings.TrimSpace(string(raw))
			}
			return process.Process{}, e
		}
		return process.Process{}, err
	}
	defer conn.Close()
	stopCtx := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stopCtx()
	// The service pings every 15 s; silence for three is a dead link.
	const silent = 45 * time.Second
	_ = conn.SetReadDeadline(time.Now().Add(silent))
	conn.SetPingHandler(func(data string) error {
		_ = conn.SetReadDeadline(time.Now().Add(silent))
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	progress := false
	var buf bytes.Buffer
	for {
		mt, r, err := conn.NextReader()
		if err != nil {
			if progress {
				return process.Process{}, fmt.Errorf("%w: %v", errProgress, err)
			}
			return process.Process{}, err
		}
		_ = conn.SetReadDeadline(time.Now().Add(silent))
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			if progress {
				return process.Process{}, fmt.Errorf("%w: %v", errProgress, err)
			}
			return process.Process{}, err
		}
		b := buf.Bytes()
		var piece Output
		if mt == websocket.BinaryMessage {
			if len(b) < 9 {
				return process.Process{}, &stopError{errors.New("malformed output frame")}
			}
			piece = Output{Stream: "stdout", Offset: int64(binary.BigEndian.Uint64(b[1:9])), Data: b[9:]}
			if b[0] == 2 {
				piece.Stream = "stderr"
			}
		} else {
			var m message
			if err := json.Unmarshal(b, &m); err != nil {
				return process.Process{}, &stopError{fmt.Errorf("malformed message: %w", err)}
			}
			switch m.Type {
			case "end":
				return m.Process, nil
			case "gap":
				if o.OnGap != nil {
					o.OnGap(m.From, m.To)
				}
				*since = m.To
				continue
			case "error":
				continue
			case "output":
				piece = Output{Stream: m.Stream, Offset: m.Offset, Data: []byte(m.Data)}
				if m.Encoding == "base64" {
					if piece.Data, err = base64.StdEncoding.DecodeString(m.Data); err != nil {
						return process.Process{}, &stopError{fmt.Errorf("malformed output message: %w", err)}
					}
				}
			default:
				continue
			}
		}
		if piece.Offset != *since {
			return process.Process{}, &stopError{fmt.Errorf("output offset %d, expected %d", piece.Offset, *since)}
		}
		if err := out(piece); err != nil {
			return process.Process{}, &stopError{err}
		}
		*since += int64(len(piece.Data))
		progress = true
	}
}
