// Package client is `deckhand tunnel`: it forwards a port on the user's
// machine to a port in the container through the tunnel service's
// WebSocket, like `ssh -L`. Each accepted local connection gets its own
// WebSocket (one session on the service), so a drop cuts only the
// connections in flight; the listener stays and the next connection dials
// again, retrying with backoff while the service is unreachable (a laptop
// waking from sleep, an agent restarting). Pings every interval find a
// WebSocket that died while the machine slept; its local connection is then
// closed, as a TCP reset would.
//
// Authentication works on the upgrade, where browsers and many proxies
// allow no custom headers: the token goes as Authorization: Bearer AND as a
// cookie (deckhand_token by default), and optionally as a query parameter,
// so the gateway's proxy permissions can check whichever its token group
// reads.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"deckhand/services/tunnel/wire"
)

// Options configure a forward.
type Options struct {
	// URL is the tunnel service: http://127.0.0.1:7706, or through the
	// gateway https://host/_/tunnel.
	URL string
	// Local is the address to listen on (127.0.0.1:2222).
	Local string
	// Remote is the port inside the container.
	Remote int
	// Token, when set, authenticates every request.
	Token string
	// TokenCookie is the cookie name the token is also sent in ("" = none).
	TokenCookie string
	// TokenQuery is a query parameter the token is also sent in ("" = none:
	// query strings end up in logs).
	TokenQuery string
	// Header are further request headers (X-Api-Key: ...).
	Header http.Header
	// PingInterval between pings; a silent peer is cut after two.
	PingInterval time.Duration
	// ConnectTimeout bounds how long a local connection waits for the
	// tunnel while the service is unreachable.
	ConnectTimeout time.Duration
	Logger         *slog.Logger
	// Listening, when set, is called with the local address once bound.
	Listening func(net.Addr)
}

// Validate checks the options, naming the flag at fault.
func (o *Options) Validate() error {
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "":
		return fmt.Errorf("--url: must be the tunnel service's http(s):// URL, got %q", o.URL)
	case o.Remote < 1 || o.Remote > 65535:
		return fmt.Errorf("--remote: must be a port from 1 to 65535, got %d", o.Remote)
	case o.Local == "":
		return fmt.Errorf("--local: must be an address to listen on, such as 127.0.0.1:2222")
	case o.PingInterval <= 0:
		return fmt.Errorf("--ping-interval: must be positive")
	case o.ConnectTimeout <= 0:
		return fmt.Errorf("--connect-timeout: must be positive")
	}
	if _, _, err := net.SplitHostPort(o.Local); err != nil {
		return fmt.Errorf("--local: must be HOST:PORT, got %q", o.Local)
	}
	return nil
}

// Forwarder runs one forward.
type Forwarder struct {
	o      Options
	wsURL  string
	dialer wire.Dialer
	log    *slog.Logger
	wg     sync.WaitGroup
}

// New checks o and prepares the forward.
func New(o Options) (*Forwarder, error) {
	if o.PingInterval == 0 {
		o.PingInterval = 15 * time.Second
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	u, _ := url.Parse(o.URL)
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/tunnel/ws"
	u.RawPath = ""
	q := u.Query()
	q.Set("port", strconv.Itoa(o.Remote))
	if o.Token != "" && o.TokenQuery != "" {
		q.Set(o.TokenQuery, o.Token)
	}
	u.RawQuery = q.Encode()
	return &Forwarder{o: o, wsURL: u.String(), log: o.Logger, dialer: wire.Dialer{Timeout: 10 * time.Second}}, nil
}

// header is the handshake's headers: the token as bearer and cookie.
func (f *Forwarder) header() http.Header {
	h := http.Header{}
	for k, v := range f.o.Header {
		h[k] = append([]string(nil), v...)
	}
	if f.o.Token != "" {
		h.Set("Authorization", "Bearer "+f.o.Token)
		if f.o.TokenCookie != "" {
			h.Add("Cookie", (&http.Cookie{Name: f.o.TokenCookie, Value: f.o.Token}).String())
		}
	}
	return h
}

// Run listens and forwards until ctx ends, then waits for the connections
// in flight to close.
func (f *Forwarder) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.o.Local)
	if err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	if f.o.Listening != nil {
		f.o.Listening(ln.Addr())
	}
	f.log.Info("forwarding", "local", ln.Addr().String(), "remote", f.o.Remote, "via", redact(f.wsURL, f.o.TokenQuery))
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	conns := map[net.Conn]bool{}
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		f.wg.Wait()
	}()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and the like: wait and go on, as net/http does.
			time.Sleep(backoff)
			if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			continue
		}
		backoff = 5 * time.Millisecond
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.forward(ctx, c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// forward bridges one local connection.
func (f *Forwarder) forward(ctx context.Context, c net.Conn) {
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	ws, err := f.connect(ctx)
	if err != nil {
		f.log.Warn("tunnel not opened; closing the local connection", "local", c.RemoteAddr().String(), "err", err)
		return
	}
	if err := wire.Bridge(ws, c, f.o.PingInterval, wire.Counters{}); err != nil {
		f.log.Info("tunnel ended", "local", c.RemoteAddr().String(), "err", err)
	}
}

// RefusedError is the service's refusal of a tunnel (a 4xx or a 502
// UPSTREAM_UNREACHABLE): retrying the same request will not help.
type RefusedError struct {
	Status  int
	Code    string
	Message string
}

func (e *RefusedError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the service answered %d", e.Status)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// connect opens the WebSocket, retrying with backoff (100 ms doubling to
// 5 s) while the service is unreachable, for at most ConnectTimeout.
func (f *Forwarder) connect(ctx context.Context) (*wire.Conn, error) {
	deadline := time.Now().Add(f.o.ConnectTimeout)
	wait := 100 * time.Millisecond
	d := f.dialer
	d.Header = f.header()
	for {
		ws, err := d.Dial(ctx, f.wsURL)
		if err == nil {
			return ws, nil
		}
		if resp, ok := errors.AsType[*wire.HandshakeError](err); ok {
			rerr := refusal(resp)
			// 502 BACKEND_ERROR / 503 / 504: the gateway or the service is
			// restarting; anything else is the answer.
			retry := resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusGatewayTimeout ||
				(resp.Status == http.StatusBadGateway && rerr.Code != "UPSTREAM_UNREACHABLE")
			if !retry {
				return nil, rerr
			}
			err = rerr
		}
		if ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("service unreachable for %s: %w", f.o.ConnectTimeout, err)
		}
		f.log.Debug("tunnel: service unreachable, retrying", "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if wait *= 2; wait > 5*time.Second {
			wait = 5 * time.Second
		}
	}
}

func refusal(resp *wire.HandshakeError) *RefusedError {
	e := &RefusedError{Status: resp.Status}
	var body struct{ Code, Message string }
	if json.Unmarshal(resp.Body, &body) == nil {
		e.Code, e.Message = body.Code, body.Message
	}
	return e
}

// redact hides the token in a URL for logs.
func redact(raw, param string) string {
	if param == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	if q.Has(param) {
		q.Set(param, "REDACTED")
	}
	u.RawQuery = q.Encode()
	return u.String()
}
