package deckhand

import (
	"cmp"
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

	wire "github.com/deckhand-dev/deckhand/sdk/go/tunnelwire"
)

// ForwardOptions configure a port forward (Container.Forward, like
// ssh -L): connections accepted at Local reach port Remote inside the
// container through the tunnel service's WebSocket.
type ForwardOptions struct {
	// Local is the address to listen on (default 127.0.0.1:0).
	Local string
	// Remote is the port inside the container.
	Remote int
	// TokenCookie is a cookie the token also goes in (default the
	// handle's Options.AgentTokenCookie), and TokenQuery a query
	// parameter ("" = none: query strings end up in logs), for proxy
	// permissions that read the token there on the upgrade, where
	// browsers and many proxies allow no custom headers.
	TokenCookie, TokenQuery string
	// Header are further handshake headers (X-Api-Key: ...).
	Header http.Header
	// PingInterval between pings (default 15 s); a silent peer is cut
	// after two.
	PingInterval time.Duration
	// ConnectTimeout bounds how long a local connection waits for its
	// tunnel while the service is unreachable (default 30 s).
	ConnectTimeout time.Duration
	// Logger gets the forward's events (default slog.Default()).
	Logger *slog.Logger
	// Listening, when set, is called with the local address once bound.
	Listening func(net.Addr)
}

// TunnelRefusedError is the tunnel service's refusal of a tunnel (a 4xx,
// or 502 UPSTREAM_UNREACHABLE when nothing listens on the port): trying
// the same again will not help.
type TunnelRefusedError struct {
	Status  int
	Code    string
	Message string
}

func (e *TunnelRefusedError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("deckhand: the tunnel service answered %d", e.Status)
	}
	return fmt.Sprintf("deckhand: the tunnel service answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Forward listens on o.Local and forwards each accepted connection to
// port o.Remote in the container until ctx ends, then waits for the
// connections in flight to close. Each local connection gets its own
// WebSocket (one session of the tunnel service), so a drop ends only the
// connections in flight; the listener stays and the next connection
// dials again, retrying with backoff (100 ms doubling to 5 s) while the
// service is unreachable (a laptop waking from sleep, an agent
// restarting). Pings find a WebSocket that died while the machine slept;
// its local connection is then closed, as a TCP reset would. Binary
// frames carry the bytes, a half-close passes on as such (see package
// tunnelwire).
func (c *Container) Forward(ctx context.Context, o ForwardOptions) error {
	f, err := c.forwarder(o)
	if err != nil {
		return err
	}
	return f.run(ctx)
}

type forwarder struct {
	o      ForwardOptions
	c      *Container
	wsURL  string
	dialer wire.Dialer
	log    *slog.Logger
	wg     sync.WaitGroup
}

func (c *Container) forwarder(o ForwardOptions) (*forwarder, error) {
	o.Local = cmp.Or(o.Local, "127.0.0.1:0")
	o.PingInterval = cmp.Or(o.PingInterval, 15*time.Second)
	o.ConnectTimeout = cmp.Or(o.ConnectTimeout, 30*time.Second)
	o.TokenCookie = cmp.Or(o.TokenCookie, c.cookie)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	base := c.ServiceURL("tunnel")
	u, err := url.Parse(base)
	switch {
	case base == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "":
		return nil, fmt.Errorf("deckhand: Forward: the tunnel service's URL must be http(s):// with a host, got %q", base)
	case o.Remote < 1 || o.Remote > 65535:
		return nil, fmt.Errorf("deckhand: Forward: Remote must be a port from 1 to 65535, got %d", o.Remote)
	case o.PingInterval < 0 || o.ConnectTimeout < 0:
		return nil, errors.New("deckhand: Forward: PingInterval and ConnectTimeout must be positive")
	}
	if _, _, err := net.SplitHostPort(o.Local); err != nil {
		return nil, fmt.Errorf("deckhand: Forward: Local must be HOST:PORT, got %q", o.Local)
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1) // ws and wss stay
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/tunnel/ws"
	u.RawPath = ""
	f := &forwarder{o: o, c: c, log: o.Logger, dialer: wire.Dialer{Timeout: 10 * time.Second}}
	q := u.Query()
	q.Set("port", strconv.Itoa(o.Remote))
	u.RawQuery = q.Encode()
	f.wsURL = u.String()
	if c.proxyAddr != "" && c.base == "" && c.route != RouteAgentAddr {
		nd := &net.Dialer{Timeout: 30 * time.Second}
		f.dialer.NetDial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return nd.DialContext(ctx, network, c.proxyAddr)
		}
	}
	return f, nil
}

// dial is the URL and headers of one tunnel: the token (fresh: a minted
// one is renewed before it expires) as bearer, cookie and query parameter
// as asked.
func (f *forwarder) dial(ctx context.Context) (string, http.Header, error) {
	h := http.Header{}
	for k, v := range f.o.Header {
		h[k] = append([]string(nil), v...)
	}
	tok, err := f.c.agentToken(ctx)
	if err != nil || tok == "" {
		return f.wsURL, h, err
	}
	h.Set("Authorization", "Bearer "+tok)
	if f.o.TokenCookie != "" {
		h.Add("Cookie", (&http.Cookie{Name: f.o.TokenCookie, Value: tok}).String())
	}
	if f.o.TokenQuery == "" {
		return f.wsURL, h, nil
	}
	u, _ := url.Parse(f.wsURL)
	q := u.Query()
	q.Set(f.o.TokenQuery, tok)
	u.RawQuery = q.Encode()
	return u.String(), h, nil
}

func (f *forwarder) run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.o.Local)
	if err != nil {
		return fmt.Errorf("deckhand: Forward: listening on %s: %w", f.o.Local, err)
	}
	if f.o.Listening != nil {
		f.o.Listening(ln.Addr())
	}
	f.log.Info("forwarding", "local", ln.Addr().String(), "remote", f.o.Remote, "via", f.wsURL)
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
			backoff = min(2*backoff, time.Second)
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
func (f *forwarder) forward(ctx context.Context, c net.Conn) {
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

// connect opens the WebSocket, retrying with backoff (100 ms doubling to
// 5 s) while the service is unreachable, for at most ConnectTimeout.
func (f *forwarder) connect(ctx context.Context) (*wire.Conn, error) {
	deadline := time.Now().Add(f.o.ConnectTimeout)
	wait := 100 * time.Millisecond
	for {
		u, h, err := f.dial(ctx)
		if err != nil {
			return nil, err
		}
		d := f.dialer
		d.Header = h
		ws, err := d.Dial(ctx, u)
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
			return nil, fmt.Errorf("deckhand: the tunnel service was unreachable for %s: %w", f.o.ConnectTimeout, err)
		}
		f.log.Debug("tunnel: service unreachable, retrying", "in", wait, "err", err)
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func refusal(resp *wire.HandshakeError) *TunnelRefusedError {
	e := &TunnelRefusedError{Status: resp.Status}
	var body struct{ Code, Message string }
	if json.Unmarshal(resp.Body, &body) == nil {
		e.Code, e.Message = body.Code, body.Message
	}
	return e
}
