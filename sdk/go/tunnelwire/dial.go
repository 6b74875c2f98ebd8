package tunnelwire

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/gobwas/ws"
)

// Dialer opens the client end of a tunnel WebSocket.
type Dialer struct {
	// Header is sent with the handshake (Authorization, Cookie, ...).
	Header http.Header
	// Timeout bounds connecting and the handshake (0: 10 s).
	Timeout time.Duration
	// Proxy picks an HTTP proxy for a URL (nil: the environment's,
	// HTTP_PROXY/HTTPS_PROXY/NO_PROXY, as net/http and gorilla do).
	Proxy func(*http.Request) (*url.URL, error)
	// TLSConfig is for wss:// (nil: system roots).
	TLSConfig *tls.Config
	// NetDial, when set, makes every connection instead of Proxy (the
	// SDK's route through the platform proxy's own address).
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// HandshakeError is the service's answer when it did not switch protocols
// (401, 403, 502 UPSTREAM_UNREACHABLE, ...).
type HandshakeError struct {
	Status int
	Body   []byte // the first 4 KiB
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("websocket handshake: the service answered %d", e.Status)
}

// Dial opens a tunnel WebSocket to rawURL (ws:// or wss://).
func (d Dialer) Dial(ctx context.Context, rawURL string) (*Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	proxy := d.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	if d.NetDial == nil {
		d.NetDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialVia(ctx, proxy, u, addr)
		}
	}
	var refused *HandshakeError
	wd := ws.Dialer{
		Timeout:   cmp.Or(d.Timeout, 10*time.Second),
		Header:    ws.HandshakeHeaderHTTP(d.Header),
		TLSConfig: d.TLSConfig,
		NetDial:   d.NetDial,
		OnStatusError: func(status int, _ []byte, resp io.Reader) {
			refused = &HandshakeError{Status: status}
			if r, err := http.ReadResponse(bufio.NewReader(resp), nil); err == nil {
				refused.Body, _ = io.ReadAll(io.LimitReader(r.Body, 4096))
			}
		},
	}
	raw, br, _, err := wd.Dial(ctx, rawURL)
	if err != nil {
		if refused != nil {
			return nil, refused
		}
		return nil, err
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return Client(raw, br), nil
}

// dialVia connects to addr, through an HTTP proxy (CONNECT) when the
// environment names one for u.
func dialVia(ctx context.Context, proxy func(*http.Request) (*url.URL, error), u *url.URL, addr string) (net.Conn, error) {
	hu := *u // the proxy is chosen as for the HTTP URL (HTTP_PROXY or HTTPS_PROXY)
	hu.Scheme = "http"
	if u.Scheme == "wss" {
		hu.Scheme = "https"
	}
	pu, err := proxy(&http.Request{URL: &hu})
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	var nd net.Dialer
	if pu == nil {
		return nd.DialContext(ctx, "tcp", addr)
	}
	paddr := pu.Host
	if pu.Port() == "" {
		port := "80"
		if pu.Scheme == "https" {
			port = "443"
		}
		paddr = net.JoinHostPort(pu.Hostname(), port)
	}
	c, err := nd.DialContext(ctx, "tcp", paddr)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
	}
	if pu.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: pu.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
		}
		c = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
		defer func() { _ = c.SetDeadline(time.Time{}) }()
	}
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n"
	if pu.User != nil {
		pw, _ := pu.User.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pw)) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy %s: %w", pu.Redacted(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("proxy %s refused CONNECT %s: %s", pu.Redacted(), addr, resp.Status)
	}
	if br.Buffered() > 0 { // the target spoke first: not a WebSocket server
		c.Close()
		return nil, errors.New("proxy: bytes arrived before the WebSocket handshake")
	}
	return c, nil
}
