package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/proxy"

	"deckhand/platform/netconf"
)

// Upstream opens the agent's side of one forwarded connection.
type Upstream interface {
	// Dial connects to dst through the upstream. Errors name the upstream
	// (never its credentials).
	Dial(ctx context.Context, dst string) (net.Conn, error)
	// Via is what decisions record: the proxy's host:port, or "" for a
	// direct connection.
	Via() string
}

// DialTimeout bounds connecting to a proxy and its handshake.
const DialTimeout = 10 * time.Second

// ProxyError is a failure of the proxy itself (unreachable, refused the
// credentials, refused the destination): the message names the proxy by
// its endpoint and never carries its credentials.
type ProxyError struct {
	Proxy string // scheme://host:port
	Op    string // connect, handshake, CONNECT
	Err   error
}

func (e *ProxyError) Error() string {
	return fmt.Sprintf("proxy %s: %s: %v", e.Proxy, e.Op, e.Err)
}

func (e *ProxyError) Unwrap() error { return e.Err }

// newUpstream builds the upstream of a compiled configuration: the proxy
// (SOCKS5 through golang.org/x/net/proxy, HTTP CONNECT, CONNECT over TLS)
// or direct connections for block with an allow list. base dials the
// agent's own sockets (marked, so the rules let them out).
func newUpstream(c *netconf.Compiled, base *net.Dialer, tlsConf *tls.Config) (Upstream, error) {
	if c.Proxy == nil {
		return direct{base}, nil
	}
	u := c.Proxy
	endpoint := strings.ToLower(u.Scheme) + "://" + u.Host
	switch c.Doc.Type {
	case netconf.TypeSOCKS5:
		var auth *proxy.Auth
		if u.User != nil {
			pw, _ := u.User.Password()
			auth = &proxy.Auth{User: u.User.Username(), Password: pw}
		}
		d, err := proxy.SOCKS5("tcp", u.Host, auth, base)
		if err != nil {
			return nil, &ProxyError{Proxy: endpoint, Op: "configure", Err: err}
		}
		wc, ok := d.(withConn)
		if !ok {
			return nil, &ProxyError{Proxy: endpoint, Op: "configure", Err: errors.New("SOCKS5 dialer cannot handshake on a connection")}
		}
		return &socks5{base: base, addr: u.Host, endpoint: endpoint, d: wc}, nil
	case netconf.TypeHTTP, netconf.TypeHTTPS:
		h := &connectProxy{base: base, addr: u.Host, endpoint: endpoint}
		if u.User != nil {
			pw, _ := u.User.Password()
			h.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
		}
		if c.Doc.Type == netconf.TypeHTTPS {
			conf := &tls.Config{MinVersion: tls.VersionTLS12}
			if tlsConf != nil {
				conf = tlsConf.Clone()
			}
			conf.ServerName = u.Hostname()
			h.tls = conf
		}
		return h, nil
	}
	return nil, fmt.Errorf("type %s has no upstream", c.Doc.Type)
}

// withConn is x/net/proxy's SOCKS5 dialer: the handshake runs on a
// connection the agent dialed, which stays a *net.TCPConn, so the copy
// loop splices.
type withConn interface {
	DialWithConn(ctx context.Context, c net.Conn, network, address string) (net.Addr, error)
}

type direct struct{ base *net.Dialer }

func (d direct) Dial(ctx context.Context, dst string) (net.Conn, error) {
	return d.base.DialContext(ctx, "tcp", dst)
}

func (direct) Via() string { return "" }

type socks5 struct {
	base           *net.Dialer
	addr, endpoint string
	d              withConn
}

func (s *socks5) Via() string { return s.addr }

func (s *socks5) Dial(ctx context.Context, dst string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	c, err := s.base.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, &ProxyError{Proxy: s.endpoint, Op: "connect", Err: cleanErr(err)}
	}
	if _, err := s.d.DialWithConn(ctx, c, "tcp", dst); err != nil {
		c.Close()
		return nil, &ProxyError{Proxy: s.endpoint, Op: "SOCKS5 CONNECT " + dst, Err: cleanErr(err)}
	}
	return c, nil
}

type connectProxy struct {
	base           *net.Dialer
	addr, endpoint string
	auth           string // Proxy-Authorization value ("" none)
	tls            *tls.Config
}

func (h *connectProxy) Via() string { return h.addr }

func (h *connectProxy) Dial(ctx context.Context, dst string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	raw, err := h.base.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, &ProxyError{Proxy: h.endpoint, Op: "connect", Err: cleanErr(err)}
	}
	c := raw
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	if h.tls != nil {
		tc := tls.Client(raw, h.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, &ProxyError{Proxy: h.endpoint, Op: "TLS handshake", Err: cleanErr(err)}
		}
		c = tc
	}
	var req strings.Builder
	req.WriteString("CONNECT " + dst + " HTTP/1.1\r\nHost: " + dst + "\r\n")
	if h.auth != "" {
		req.WriteString("Proxy-Authorization: " + h.auth + "\r\n")
	}
	req.WriteString("\r\n")
	if _, err := c.Write([]byte(req.String())); err != nil {
		c.Close()
		return nil, &ProxyError{Proxy: h.endpoint, Op: "CONNECT " + dst, Err: cleanErr(err)}
	}
	br := bufio.NewReaderSize(c, 1024)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, &ProxyError{Proxy: h.endpoint, Op: "CONNECT " + dst, Err: fmt.Errorf("no answer: %v", cleanErr(err))}
	}
	if resp.StatusCode/100 != 2 {
		c.Close()
		return nil, &ProxyError{Proxy: h.endpoint, Op: "CONNECT " + dst, Err: fmt.Errorf("proxy answered %s", resp.Status)}
	}
	_ = raw.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// The destination spoke first and its bytes came with the answer.
		head, _ := br.Peek(br.Buffered())
		return &prefixed{Conn: c, head: append([]byte(nil), head...)}, nil
	}
	return c, nil
}

// prefixed is a connection whose first bytes were read already.
type prefixed struct {
	net.Conn
	head []byte
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

func (p *prefixed) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// cleanErr drops what a wrapped error could echo of a URL (x/net/proxy
// errors name addresses, never credentials; url.Error would).
func cleanErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
