package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"deckhand/platform/netconf"
)

// maxSniff bounds what is read of a connection before it is judged: a
// TLS record (16 KiB and its header) or an HTTP request head.
const maxSniff = 16<<10 + 5

// SniffWait is how long the forwarder waits for a client's first bytes
// when lists are set. A protocol where the server speaks first is judged
// on its address alone after it.
const SniffWait = 300 * time.Millisecond

// Hello is what a connection's first bytes say about where it goes.
type Hello struct {
	// Name is the TLS SNI or the HTTP Host (normalized; "" when none or
	// an IP literal).
	Name string
	// Kind is "tls", "http" or "" (other or nothing sent in time).
	Kind string
	// Raw are the bytes read; they are sent upstream first.
	Raw []byte
}

// Sniff reads the start of c (until deadline) and finds the name it
// presents: the SNI of a TLS ClientHello (parsed by crypto/tls) or the
// Host of an HTTP/1 request. Payload bytes are kept only to pass on.
func Sniff(c net.Conn, wait time.Duration) Hello {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	defer c.SetReadDeadline(time.Time{})
	rec := &recorder{r: c}
	first := make([]byte, 1)
	if _, err := io.ReadFull(rec, first); err != nil {
		return Hello{Raw: rec.buf}
	}
	switch {
	case first[0] == 0x16: // TLS handshake record
		name := sniTLS(rec)
		return Hello{Name: name, Kind: "tls", Raw: rec.buf}
	case first[0] >= 'A' && first[0] <= 'Z':
		name, ok := hostHTTP(rec)
		if !ok {
			return Hello{Raw: rec.buf}
		}
		return Hello{Name: name, Kind: "http", Raw: rec.buf}
	}
	return Hello{Raw: rec.buf}
}

// recorder keeps every byte read through it (up to maxSniff).
type recorder struct {
	r   io.Reader
	buf []byte
}

var errTooLong = errors.New("sniff: too long")

func (r *recorder) Read(p []byte) (int, error) {
	if len(r.buf) >= maxSniff {
		return 0, errTooLong
	}
	if room := maxSniff - len(r.buf); len(p) > room {
		p = p[:room]
	}
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

var errSeen = errors.New("sniff: hello seen")

// sniTLS hands the recorded stream to crypto/tls as a server that stops
// at the ClientHello.
func sniTLS(rec *recorder) string {
	var name string
	conn := &replayConn{rec: rec}
	srv := tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name = h.ServerName
		return nil, errSeen
	}})
	_ = srv.Handshake()
	n, _ := netconf.NormalizeName(name)
	return n
}

// replayConn feeds crypto/tls the recorded first byte, then the rest of
// the client's stream; what it writes (an alert) is dropped.
type replayConn struct {
	net.Conn
	rec *recorder
	off int
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.off < len(c.rec.buf) {
		n := copy(p, c.rec.buf[c.off:])
		c.off += n
		return n, nil
	}
	n, err := c.rec.Read(p)
	c.off += n
	return n, err
}

func (c *replayConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *replayConn) Close() error                     { return nil }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }

// hostHTTP reads an HTTP/1 request head and returns its Host.
func hostHTTP(rec *recorder) (string, bool) {
	for !bytes.Contains(rec.buf, []byte("\r\n\r\n")) {
		p := make([]byte, 4096)
		if _, err := rec.Read(p); err != nil {
			return "", false
		}
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(rec.buf)))
	if err != nil {
		return "", false
	}
	host := req.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	n, _ := netconf.NormalizeName(host)
	return n, true
}
