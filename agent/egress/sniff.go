package egress

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"regexp"
	"strings"
	"time"

	"golang.org/x/crypto/cryptobyte"

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
	// Unreadable: the connection starts as TLS or HTTP but the name it
	// presents cannot be read as one name (a ClientHello or request head
	// that does not parse, is cut short, or names two hosts). A server
	// may read a name there the forwarder did not, so under lists such a
	// connection is refused, never judged on its address.
	Unreadable bool
	// Raw are the bytes read; they are sent upstream first.
	Raw []byte
}

// Sniff reads the start of c (until deadline) and finds the name it
// presents: the SNI of a TLS ClientHello or the Host of an HTTP/1
// request. Payload bytes are kept only to pass on.
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
		name, ok := sniTLS(rec)
		return Hello{Name: name, Kind: "tls", Unreadable: !ok, Raw: rec.buf}
	case first[0] >= 'A' && first[0] <= 'Z':
		name, kind, ok := hostHTTP(rec)
		return Hello{Name: name, Kind: kind, Unreadable: !ok, Raw: rec.buf}
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

// more reads what the client sent next; false when nothing more comes
// (end of stream, the deadline, maxSniff).
func (r *recorder) more() bool {
	p := make([]byte, 4096)
	n, err := r.Read(p)
	return n > 0 || err == nil
}

// sniTLS reads the ClientHello (its handshake message may span records)
// and returns its server name. The hello is parsed here rather than by
// crypto/tls: that parser refuses names servers accept (a trailing dot),
// and a name this side cannot read must never pass as "no name". ok is
// false when the hello is cut short or malformed, names more than one
// host, or names one that is not a host name; a hello without a server
// name, or with an IP literal, is ok with Name "".
func sniTLS(rec *recorder) (name string, ok bool) {
	var hs []byte // the handshake bytes of the records so far
	off := 0      // the next record's start in rec.buf
	for {
		for len(rec.buf)-off >= 5 {
			typ, n := rec.buf[off], int(rec.buf[off+3])<<8|int(rec.buf[off+4])
			if typ != 0x16 || n == 0 {
				return "", false
			}
			if len(rec.buf)-off-5 < n {
				break
			}
			hs = append(hs, rec.buf[off+5:off+5+n]...)
			off += 5 + n
			if len(hs) >= 4 {
				if hs[0] != 1 { // ClientHello
					return "", false
				}
				if l := int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3]); len(hs) >= 4+l {
					return serverName(hs[4 : 4+l])
				}
			}
		}
		if !rec.more() {
			return "", false
		}
	}
}

// serverName reads the server_name extension of a ClientHello body.
func serverName(body []byte) (string, bool) {
	s := cryptobyte.String(body)
	var sessionID, suites, compression, exts cryptobyte.String
	if !s.Skip(2+32) || !s.ReadUint8LengthPrefixed(&sessionID) ||
		!s.ReadUint16LengthPrefixed(&suites) || !s.ReadUint8LengthPrefixed(&compression) {
		return "", false
	}
	if s.Empty() {
		return "", true // no extensions, no name
	}
	if !s.ReadUint16LengthPrefixed(&exts) || !s.Empty() {
		return "", false
	}
	seen := map[uint16]bool{}
	name, found := "", false
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) || seen[typ] {
			return "", false
		}
		seen[typ] = true
		if typ != 0 { // server_name
			continue
		}
		var list cryptobyte.String
		if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() || list.Empty() {
			return "", false
		}
		for !list.Empty() {
			var kind uint8
			var host cryptobyte.String
			if !list.ReadUint8(&kind) || !list.ReadUint16LengthPrefixed(&host) {
				return "", false
			}
			if kind != 0 { // host_name
				continue
			}
			if found {
				return "", false // two names: which one a server takes is its choice
			}
			name, found = string(host), true
		}
	}
	if !found {
		return "", true
	}
	return judgeable(name)
}

// judgeable normalizes a presented name: a host name (one trailing dot
// dropped, as servers do) is ok; an IP literal is ok as no name; anything
// else cannot be judged.
func judgeable(name string) (string, bool) {
	if n, ok := netconf.NormalizeName(name); ok {
		return n, true
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return "", true
	}
	return "", false
}

// requestLine is an HTTP request line: a method, a target and a version.
var requestLine = regexp.MustCompile(`^[A-Z]+ [^ ]+ HTTP/[0-9]\.[0-9]\r?$`)

// methodPrefix is what the start of an HTTP request line looks like while
// it is still arriving.
var methodPrefix = regexp.MustCompile(`^[A-Z]{1,16}( |$)`)

// hostHTTP reads an HTTP/1 request head and returns its Host. kind is
// "http" for a request line, "" for another protocol that starts with a
// capital letter (judged on its address). ok is false when a request
// head does not parse (two Host headers among others), is cut short, or
// presents a Host that is not a host name.
func hostHTTP(rec *recorder) (name, kind string, ok bool) {
	for {
		line, _, complete := bytes.Cut(rec.buf, []byte("\n"))
		if !complete {
			if !methodPrefix.Match(line) {
				return "", "", true // another protocol
			}
			if !rec.more() {
				return "", "http", false // a request line cut short
			}
			continue
		}
		if !requestLine.Match(line) {
			return "", "", true
		}
		break
	}
	for !bytes.Contains(rec.buf, []byte("\r\n\r\n")) && !bytes.Contains(rec.buf, []byte("\n\n")) {
		if !rec.more() {
			return "", "http", false
		}
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(rec.buf)))
	if err != nil || req.ProtoMajor != 1 {
		return "", "http", false
	}
	// ReadRequest has taken Host out of the header (and refused two).
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(rec.buf)))
	_, _ = tp.ReadLine()
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		return "", "http", false
	}
	hosts := hdr.Values("Host")
	host := req.Host
	if req.URL.Host != "" && len(hosts) == 1 && !strings.EqualFold(hosts[0], req.URL.Host) {
		return "", "http", false // an absolute target and another Host
	}
	if host == "" {
		// HTTP/1.0 may omit it; HTTP/1.1 must send one.
		return "", "http", req.ProtoMinor == 0
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	n, ok := judgeable(host)
	return n, "http", ok
}
