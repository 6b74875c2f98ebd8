package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"deckhand/platform/hostroute"
	"deckhand/platform/splice"
)

// The plain-HTTP front: each client connection is read by one goroutine,
// which parses a request, judges its Host, writes it to a pooled agent
// connection and reads the answer itself, with no other goroutine between
// the client and the agent. On a machine of few cores what a small request
// costs through a proxy is mostly wake-ups: net/http's server adds a
// background read per request and httputil.ReverseProxy a header map and
// a copy of the request each way; this path has neither.
//
// It takes only the plain case: an HTTP/1.1 GET or HEAD without a body,
// an upgrade or an expectation, for a running container, with a head that
// fits headMax. Anything else (and any request the front cannot read) is
// handed, bytes unread, with the rest of its connection to the net/http
// server, which answers it as the proxy always has: a parse error the same
// 400, a WebSocket the same upgrade, a wake the same wait. A request the
// front takes is judged by the same Host parser and the same record as
// there, request by request on a kept-alive connection.

// headMax is the most of a request head the front reads; a longer head
// goes to the net/http server (which takes up to its MaxHeaderBytes).
const headMax = 8 << 10

// headWait is how long the front waits for an agent's answer before it
// watches the client's connection, so a client that leaves frees the
// agent's connection. Streamed answers are watched from their head on.
const headWait = 250 * time.Millisecond

// Serve serves plain HTTP/1.1 on ln, through the front for plain requests
// and through srv (made by Server) for the rest, until srv shuts down or
// closes. ln is closed then.
func (p *Proxy) Serve(srv *http.Server, ln net.Listener) error {
	f := &front{p: p, ln: ln, conns: map[net.Conn]bool{}}
	f.handoff = &connListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{}), onClose: f.close}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(f.handoff) }()
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			f.handoff.Close()
			if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
				return serr
			}
			return err
		}
		if !f.track(conn, true) {
			_ = conn.Close()
			continue
		}
		go f.serve(conn)
	}
}

// front is one Serve's state.
type front struct {
	p       *Proxy
	ln      net.Listener
	handoff *connListener

	mu     sync.Mutex
	conns  map[net.Conn]bool // the front's connections: true while idle
	closed bool
}

// track records conn's state (idle or not); false once the front closes.
func (f *front) track(conn net.Conn, idle bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[conn] = idle
	return true
}

func (f *front) untrack(conn net.Conn) {
	f.mu.Lock()
	delete(f.conns, conn)
	f.mu.Unlock()
}

// close stops the front: its listener and idle connections close, busy
// ones after their answer.
func (f *front) close() {
	f.mu.Lock()
	f.closed = true
	for c, idle := range f.conns {
		if idle {
			_ = c.Close()
			delete(f.conns, c)
		}
	}
	f.mu.Unlock()
	_ = f.ln.Close()
}

// frontConn is one client connection while the front serves it.
type frontConn struct {
	f      *front
	conn   net.Conn
	tcp    *net.TCPConn // nil when conn is not TCP
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string
}

// parsers read a head already in a connection's buffer, without taking it
// from there.
var parsers = sync.Pool{New: func() any { return &parser{br: bufio.NewReaderSize(nil, headMax)} }}

type parser struct {
	head bytes.Reader
	br   *bufio.Reader
}

func (f *front) serve(conn net.Conn) {
	fc := &frontConn{f: f, conn: conn, br: bufio.NewReaderSize(conn, headMax), bw: bufio.NewWriterSize(conn, 4<<10),
		remote: conn.RemoteAddr().String()}
	fc.tcp, _ = conn.(*net.TCPConn)
	cfg := &f.p.cfg
	wait := cfg.HeaderTimeout
	for {
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		wait = cfg.IdleTimeout
		if _, err := fc.br.Peek(1); err != nil || !f.track(conn, false) {
			break
		}
		_ = conn.SetReadDeadline(time.Now().Add(cfg.HeaderTimeout))
		req, n := fc.readRequest()
		if req == nil {
			if n < 0 {
				break // the client left, or sent no head in time
			}
			fc.handOff()
			return
		}
		_ = conn.SetReadDeadline(time.Time{})
		keep, taken := fc.forward(req, n)
		if !taken {
			fc.handOff()
			return
		}
		if !keep || !f.track(conn, true) {
			break
		}
	}
	f.untrack(conn)
	_ = conn.Close()
}

// handOff gives the connection, its unread bytes first, to the net/http
// server.
func (fc *frontConn) handOff() {
	fc.f.untrack(fc.conn)
	if !fc.f.handoff.hand(&replayConn{Conn: fc.conn, br: fc.br}) {
		_ = fc.conn.Close()
	}
}

// readRequest reads the next request's head and parses it without taking
// it from br: a request the front takes comes with the head's length; nil
// and 0 hand the connection over, nil and -1 end it.
func (fc *frontConn) readRequest() (*http.Request, int) {
	n := 0
	for {
		buf, err := fc.br.Peek(fc.br.Buffered())
		if i := headEnd(buf); i > 0 {
			n = i
			break
		}
		if err != nil {
			return nil, -1
		}
		if fc.br.Buffered() == fc.br.Size() {
			return nil, 0 // longer than the front reads
		}
		// A head cut short by the client's end or the header timeout
		// is not answered, as net/http answers none.
		if _, err := fc.br.Peek(fc.br.Buffered() + 1); err != nil {
			return nil, -1
		}
	}
	head, _ := fc.br.Peek(n)
	ps := parsers.Get().(*parser)
	ps.head.Reset(head)
	ps.br.Reset(&ps.head)
	req, err := http.ReadRequest(ps.br)
	ps.head.Reset(nil)
	ps.br.Reset(nil)
	parsers.Put(ps)
	if err != nil || !plain(req) || !oneHost(head) {
		return nil, 0
	}
	req.RemoteAddr = fc.remote
	delete(req.Header, "Host")
	return req, n
}

// headEnd is the length of the head at b's start (through the empty line
// that ends it), or 0 when b holds no whole head.
func headEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		k := i + j + 1
		if k < len(b) && b[k] == '\n' {
			return k + 1
		}
		if k+1 < len(b) && b[k] == '\r' && b[k+1] == '\n' {
			return k + 2
		}
		i = k
	}
}

// plain says whether the front takes req; the rest go to the net/http
// server, which reads them with the checks it adds to ReadRequest's.
func plain(req *http.Request) bool {
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	if req.ContentLength != 0 || len(req.TransferEncoding) > 0 || req.RequestURI == "*" {
		return false
	}
	if !asciiHost(req.Host) {
		return false
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	if _, ok := req.Header["Expect"]; ok {
		return false
	}
	if _, ok := req.Header["Upgrade"]; ok || httpguts.HeaderValuesContainsToken(req.Header["Connection"], "upgrade") {
		return false
	}
	return cleanQuery(req.URL.RawQuery)
}

// oneHost says whether head has one Host field, valid: ReadRequest
// refuses two but drops the field, and the net/http server refuses none
// or a malformed one from what its own read keeps.
func oneHost(head []byte) bool {
	n := 0
	line, rest, _ := bytes.Cut(head, []byte("\n")) // the request line
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(name, []byte("host")) {
			continue
		}
		n++
		if !httpguts.ValidHostHeader(string(bytes.Trim(value, " \t\r"))) {
			return false
		}
	}
	return n == 1
}

// asciiHost says whether host goes upstream as it is: printable ASCII,
// no zone (net/http rewrites the others).
func asciiHost(host string) bool {
	if host == "" || !httpguts.ValidHostHeader(host) {
		return false
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return false
		}
	}
	return true
}

// cleanQuery says whether httputil.ReverseProxy would pass the query as
// it is (it rewrites one with a semicolon or a broken escape).
func cleanQuery(q string) bool {
	for i := 0; i < len(q); {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return false
			}
			i += 3
		default:
			i++
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// forward answers req, whose head is n bytes of br, when it is for a
// running container (taken); keep says the connection serves on.
func (fc *frontConn) forward(req *http.Request, n int) (keep, taken bool) {
	p := fc.f.p
	c, u, ok := p.route(req)
	if !ok {
		return false, false
	}
	_, _ = fc.br.Discard(n)
	keep = !req.Close
	if u.limit != nil && !u.limit.allow(time.Now()) {
		b := newBuffered()
		p.tooMany(b, c)
		return fc.writeBuffered(b, keep), true
	}
	x := &exchange{fc: fc}
	resp, ac, err := x.roundTrip(u.tr, req)
	if err != nil {
		x.stopWatch()
		if x.gone.Load() || errors.Is(err, context.Canceled) {
			return false, true
		}
		b := newBuffered()
		p.agentFailed(b, c, err)
		return fc.writeBuffered(b, keep), true
	}
	upKeep, err := x.relay(req, resp, ac, keep)
	gone := x.stopWatch()
	if err == nil && !gone && upKeep {
		ac.t.put(ac)
	} else {
		ac.release()
	}
	return keep && err == nil && !gone, true
}

// route is ServeHTTP's judgement of r without an answer: the running
// container r's Host names, and its upstream; false for anything else
// (which ServeHTTP answers).
func (p *Proxy) route(r *http.Request) (Container, *upstream, bool) {
	hr, ok := hostroute.Parse(r.Host, p.cfg.Domain, p.known)
	if !ok || hr.Instance != 1 {
		return Container{}, nil, false
	}
	c, err := p.found.find(context.Background(), p.cat, hr.Prefix, hr.Server)
	if err != nil || c.Status != "running" || c.Addr == "" {
		return Container{}, nil, false
	}
	return c, p.upstream(c), true
}

// exchange is one request the front forwards, and the watch of its
// client's connection while the agent's answer is awaited or streamed.
type exchange struct {
	fc *frontConn

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	ac       *agentConn
	started  bool
	stopped  bool
	done     chan struct{}
	stopping atomic.Bool
	gone     atomic.Bool
	timer    *time.Timer
}

// roundTrip sends req on a pooled connection of t and reads the answer's
// head; a request that fails on a reused connection before any answer is
// sent once more on a new one (it has no body).
func (x *exchange) roundTrip(t *agentTransport, req *http.Request) (*http.Response, *agentConn, error) {
	x.ctx, x.cancel = context.WithCancel(context.Background())
	x.timer = time.AfterFunc(headWait, x.watch)
	for {
		if x.gone.Load() {
			return nil, nil, context.Canceled
		}
		ac, reused, err := t.get(x.ctx, false)
		if err != nil {
			return nil, nil, err
		}
		x.mu.Lock()
		x.ac = ac
		gone := x.gone.Load()
		x.mu.Unlock()
		if gone {
			ac.release()
			return nil, nil, context.Canceled
		}
		resp, err := x.send(ac, req)
		if err == nil {
			return resp, ac, nil
		}
		ac.release()
		if !reused || x.gone.Load() {
			return nil, nil, err
		}
	}
}

// send writes req to the agent, as httputil.ReverseProxy with the
// proxy's Rewrite would, and reads the answer's head.
func (x *exchange) send(ac *agentConn, req *http.Request) (*http.Response, error) {
	w := ac.bw
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(req.Host)
	w.WriteString("\r\n")
	h := req.Header
	for k, vv := range h {
		if slices.Contains(hopHeaders, k) || dropped(k) || connectionListed(h, k) {
			continue
		}
		for _, v := range vv {
			writeField(w, k, v)
		}
	}
	if httpguts.HeaderValuesContainsToken(h["Te"], "trailers") {
		w.WriteString("Te: trailers\r\n")
	}
	if ip, _, err := net.SplitHostPort(req.RemoteAddr); err == nil {
		writeField(w, "X-Forwarded-For", ip)
	}
	writeField(w, "X-Forwarded-Host", req.Host)
	w.WriteString("X-Forwarded-Proto: http\r\n\r\n")
	if err := w.Flush(); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(ac.br, req)
		if err != nil {
			return nil, err
		}
		// Interim answers (100 Continue, 103) are not passed on.
		if resp.StatusCode >= 200 {
			return resp, nil
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("the agent switched protocols unasked")
		}
	}
}

// writeHead writes the status line of code and h's fields.
func writeHead(w *bufio.Writer, code int, h http.Header) {
	w.WriteString("HTTP/1.1 ")
	w.WriteString(strconv.Itoa(code))
	w.WriteByte(' ')
	w.WriteString(http.StatusText(code))
	w.WriteString("\r\n")
	writeFields(w, h)
}

func writeFields(w *bufio.Writer, h http.Header) {
	for k, vv := range h {
		for _, v := range vv {
			writeField(w, k, v)
		}
	}
}

func writeField(w *bufio.Writer, k, v string) {
	w.WriteString(k)
	w.WriteString(": ")
	w.WriteString(v)
	w.WriteString("\r\n")
}

// hopHeaders are the hop-by-hop headers httputil.ReverseProxy drops.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// dropped are the request headers the proxy sets itself (User-Agent goes
// on when the client sent one, as with ReverseProxy).
func dropped(k string) bool {
	switch k {
	case "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Content-Length":
		return true
	}
	return false
}

// connectionListed says whether h's Connection header names k.
func connectionListed(h http.Header, k string) bool {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = strings.TrimSpace(sf); sf != "" && http.CanonicalHeaderKey(sf) == k {
				return true
			}
		}
	}
	return false
}

// relay writes the answer to the client: its head, then its body, spliced
// when large; upKeep says the agent's connection is clean for another
// exchange.
func (x *exchange) relay(req *http.Request, resp *http.Response, ac *agentConn, keep bool) (upKeep bool, err error) {
	fc := x.fc
	w := fc.bw
	h := resp.Header
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = strings.TrimSpace(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
	noBody := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent ||
		resp.StatusCode == http.StatusNotModified
	chunked := !noBody && resp.ContentLength < 0
	if chunked {
		delete(h, "Content-Length")
		x.watch() // a stream: the client may leave before its end
	} else if !noBody {
		h["Content-Length"] = []string{strconv.FormatInt(resp.ContentLength, 10)}
	}
	writeHead(w, resp.StatusCode, h)
	if _, ok := h["Date"]; !ok {
		writeField(w, "Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if len(resp.Trailer) > 0 {
		keys := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		writeField(w, "Trailer", strings.Join(keys, ", "))
	}
	if chunked {
		w.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if !keep {
		w.WriteString("Connection: close\r\n")
	}
	w.WriteString("\r\n")
	// A body that ends with the connection leaves nothing to reuse.
	upKeep = !resp.Close && (!chunked || len(resp.TransferEncoding) > 0)
	switch {
	case noBody:
		return upKeep, w.Flush()
	case chunked:
		return upKeep, x.stream(resp)
	}
	left := resp.ContentLength
	// What the head's read buffered goes first; the rest of a small body
	// through the agent connection's buffer, a large one spliced.
	for left > 0 {
		b := ac.br.Buffered()
		if b == 0 {
			if left >= spliceMin {
				break
			}
			if _, err := ac.br.Peek(1); err != nil {
				return false, err
			}
			b = ac.br.Buffered()
		}
		m := min(int64(b), left)
		buf, _ := ac.br.Peek(int(m))
		if _, err := w.Write(buf); err != nil {
			return false, err
		}
		_, _ = ac.br.Discard(int(m))
		left -= m
	}
	if left == 0 {
		return upKeep, w.Flush()
	}
	if err := w.Flush(); err != nil {
		return false, err
	}
	var m int64
	if agent, ok := ac.conn.(*net.TCPConn); ok && fc.tcp != nil {
		m, err = splice.CopyN(fc.tcp, agent, left)
	} else {
		m, err = io.CopyN(fc.conn, ac.conn, left)
	}
	if err == nil && m < left {
		err = io.ErrUnexpectedEOF
	}
	return err == nil && upKeep, err
}

// stream sends a body of unknown length chunked, each piece as it comes,
// then the trailers.
func (x *exchange) stream(resp *http.Response) error {
	w := x.fc.bw
	if err := w.Flush(); err != nil {
		return err
	}
	b := buffers.Get().(*[]byte)
	defer buffers.Put(b)
	buf := *b
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			w.WriteString(strconv.FormatInt(int64(n), 16))
			w.WriteString("\r\n")
			w.Write(buf[:n])
			w.WriteString("\r\n")
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	w.WriteString("0\r\n")
	writeFields(w, resp.Trailer)
	w.WriteString("\r\n")
	return w.Flush()
}

// watch reads the client's connection while the agent's answer is
// awaited or streamed: a client that leaves ends the exchange (the
// agent's connection is closed, not reused). A pipelined next request
// stays buffered for the front.
func (x *exchange) watch() {
	x.mu.Lock()
	if x.started || x.stopped {
		x.mu.Unlock()
		return
	}
	x.started = true
	x.done = make(chan struct{})
	x.mu.Unlock()
	go func() {
		defer close(x.done)
		if _, err := x.fc.br.Peek(1); err != nil && !x.stopping.Load() {
			x.mu.Lock()
			x.gone.Store(true)
			x.cancel()
			if x.ac != nil {
				_ = x.ac.conn.SetDeadline(time.Unix(1, 0))
			}
			x.mu.Unlock()
		}
	}()
}

// stopWatch ends the watch; it says whether the client left.
func (x *exchange) stopWatch() bool {
	x.timer.Stop()
	defer x.cancel()
	x.mu.Lock()
	x.stopped = true
	started := x.started
	x.mu.Unlock()
	if started {
		x.stopping.Store(true)
		_ = x.fc.conn.SetReadDeadline(time.Unix(1, 0))
		<-x.done
	}
	return x.gone.Load()
}

// buffered is an answer the front writes whole (the proxy's own errors).
type buffered struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func newBuffered() *buffered { return &buffered{h: http.Header{}, code: http.StatusOK} }

func (b *buffered) Header() http.Header         { return b.h }
func (b *buffered) WriteHeader(code int)        { b.code = code }
func (b *buffered) Write(p []byte) (int, error) { return b.body.Write(p) }

// writeBuffered sends b to the client; it says whether the connection
// serves on.
func (fc *frontConn) writeBuffered(b *buffered, keep bool) bool {
	w := fc.bw
	b.h.Set("Content-Length", strconv.Itoa(b.body.Len()))
	b.h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if !keep {
		b.h.Set("Connection", "close")
	}
	writeHead(w, b.code, b.h)
	w.WriteString("\r\n")
	w.Write(b.body.Bytes())
	return w.Flush() == nil && keep
}

// connListener is the net/http server's listener: the connections the
// front hands over. Its Close (the server's Shutdown or Close) stops the
// front too.
type connListener struct {
	addr    net.Addr
	ch      chan net.Conn
	done    chan struct{}
	once    sync.Once
	onClose func()
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.onClose()
	})
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// hand gives c to the server; false once it has stopped.
func (l *connListener) hand(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// replayConn is a handed-over connection: what the front read and did
// not take is read first.
type replayConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return c.br.Read(p)
		}
		c.br = nil
	}
	return c.Conn.Read(p)
}
