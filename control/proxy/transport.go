package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"time"

	"deckhand/platform/splice"
)

// agentTransport is the proxy's HTTP/1.1 client of one container's agent:
// a pool of its own connections, one exchange at a time on each, the
// answer read in the caller's goroutine. net/http's Transport runs a reader
// and a writer goroutine per connection and hands every request and answer
// between them, which costs a small request more than its bytes do; and
// here the connection stays at hand, so a large plain body is spliced from
// it to the client's connection without entering the process.
type agentTransport struct {
	addr   string
	dialer net.Dialer
	// slots holds one token per open connection: at most
	// Config.MaxConnsPerContainer.
	slots chan struct{}
	// wait bounds how long a request waits for a connection when every
	// slot is taken.
	wait time.Duration

	mu      sync.Mutex
	idle    []*agentConn // the most recently used last
	waiters []chan *agentConn
	closed  bool
}

// errBusy: every connection to the container is taken.
var errBusy = errors.New("every connection to the container's agent is in use")

var (
	// connWait is how long a request waits for a connection to a
	// container whose connections are all taken, before a 503.
	connWait = 10 * time.Second
	// idleTTL is how long an idle connection is kept: well under the
	// agent's own idle timeout (120 s), so a kept one has not been closed
	// by it, and a request whose body cannot be sent twice does not meet
	// the agent closing it.
	idleTTL = 30 * time.Second
)

const (
	// maxIdle is the most idle connections kept per container.
	maxIdle = 64
	// spliceMin is the smallest body spliced; smaller ones cost less
	// copied than the pipe's setup.
	spliceMin = 1 << 20
)

func newAgentTransport(addr string, maxConns int, wait time.Duration) *agentTransport {
	return &agentTransport{addr: addr, slots: make(chan struct{}, maxConns), wait: wait,
		dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
}

// agentConn is one connection to the agent.
type agentConn struct {
	t    *agentTransport
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	used time.Time
	once sync.Once
}

// release closes the connection and frees its slot.
func (c *agentConn) release() {
	c.once.Do(func() {
		_ = c.conn.Close()
		<-c.t.slots
	})
}

// writerKey carries the client's ResponseWriter in the request's context,
// for the spliced path (see spliceBody).
type writerKey struct{}

// withWriter marks r as one whose large answers may be spliced into w:
// plain HTTP/1.x only, where w's connection is the client's TCP socket.
func withWriter(w http.ResponseWriter, r *http.Request) *http.Request {
	if r.TLS != nil || r.ProtoMajor != 1 || r.Method != http.MethodGet {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), writerKey{}, w))
}

// CloseIdleConnections closes the idle connections; later requests dial.
func (t *agentTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.release()
	}
}

// close closes the idle connections and keeps none from now on.
func (t *agentTransport) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.CloseIdleConnections()
}

// get answers an idle connection or a new one (reused says which). A
// request that cannot be sent twice (its body is read once) takes an idle
// connection only after a peek shows the agent has not closed it.
func (t *agentTransport) get(ctx context.Context, once bool) (c *agentConn, reused bool, err error) {
	t.mu.Lock()
	for len(t.idle) > 0 {
		c = t.idle[len(t.idle)-1]
		t.idle = t.idle[:len(t.idle)-1]
		if time.Since(c.used) < idleTTL && (!once || alive(c.conn)) {
			t.mu.Unlock()
			return c, true, nil
		}
		c.release()
	}
	select {
	case t.slots <- struct{}{}:
		t.mu.Unlock()
		c, err = t.dial(ctx)
		return c, false, err
	default:
	}
	// Every slot is taken: wait for a connection handed back or a slot
	// freed, bounded.
	w := make(chan *agentConn, 1)
	t.waiters = append(t.waiters, w)
	t.mu.Unlock()
	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	var slot bool
	select {
	case c = <-w:
		return c, true, nil
	case t.slots <- struct{}{}:
		slot = true
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errBusy
	}
	t.mu.Lock()
	for i, o := range t.waiters {
		if o == w {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	select {
	case c = <-w: // handed over meanwhile
		if slot {
			<-t.slots
		}
		return c, true, nil
	default:
	}
	if slot {
		c, err = t.dial(ctx)
		return c, false, err
	}
	return nil, false, err
}

func (t *agentTransport) dial(ctx context.Context) (*agentConn, error) {
	conn, err := t.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		<-t.slots
		return nil, err
	}
	return &agentConn{t: t, conn: conn, br: bufio.NewReaderSize(conn, 16<<10), bw: bufio.NewWriterSize(conn, 4<<10)}, nil
}

// put hands a connection whose exchange ended cleanly to a waiting
// request, or keeps it idle.
func (t *agentTransport) put(c *agentConn) {
	c.used = time.Now()
	t.mu.Lock()
	if len(t.waiters) > 0 {
		// Sent under the lock (w has room for one): a waiter that gives
		// up takes itself off the list under it, then looks in w once.
		w := t.waiters[0]
		t.waiters = t.waiters[1:]
		w <- c
		t.mu.Unlock()
		return
	}
	if t.closed || len(t.idle) >= maxIdle {
		t.mu.Unlock()
		c.release()
		return
	}
	t.idle = append(t.idle, c)
	t.mu.Unlock()
}

// RoundTrip sends req on a pooled connection. A request without a body
// that fails on a reused connection before any answer (the agent closed
// it meanwhile) is sent once more on a new one.
func (t *agentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for {
		c, reused, err := t.get(req.Context(), !replayable(req))
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(c, req)
		if err == nil {
			return resp, nil
		}
		c.release()
		if !reused || !replayable(req) || req.Context().Err() != nil {
			return nil, err
		}
	}
}

func replayable(req *http.Request) bool { return req.Body == nil || req.Body == http.NoBody }

// exchange writes req on c and reads the answer's head; the body reads
// from c and hands c back when it ends.
func (t *agentTransport) exchange(c *agentConn, req *http.Request) (*http.Response, error) {
	// A client that leaves ends the exchange: the deadline wakes any read
	// or write on c, and c is not reused.
	stop := context.AfterFunc(req.Context(), func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	var werr chan error
	if replayable(req) {
		if err := c.write(req); err != nil {
			stop()
			return nil, err
		}
	} else {
		// The body goes on while the answer is read: an agent may answer
		// (and refuse) before the body's end.
		werr = make(chan error, 1)
		go func() { werr <- c.write(req) }()
	}
	fail := func(err error) (*http.Response, error) {
		stop()
		if werr != nil {
			c.release()
			<-werr
		}
		return nil, err
	}
	var resp *http.Response
	for {
		var err error
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return fail(err)
		}
		// Interim answers (100 Continue, 103) are not passed on.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	done := &exchangeEnd{c: c, stop: stop, werr: werr, keep: !resp.Close && !req.Close}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The connection is the upgraded stream's now.
		done.keep = false
		resp.Body = &upgraded{c: c, end: done}
		return resp, nil
	}
	if w, ok := req.Context().Value(writerKey{}).(http.ResponseWriter); ok && spliceable(req, resp) {
		client, _ := req.Context().Value(connKey{}).(*net.TCPConn)
		resp.Body = &spliceBody{w: w, client: client, c: c, left: resp.ContentLength, end: done}
		return resp, nil
	}
	resp.Body = &agentBody{rc: resp.Body, end: done}
	return resp, nil
}

// write sends req's head and body.
func (c *agentConn) write(req *http.Request) error {
	if err := req.Write(c.bw); err != nil {
		return err
	}
	return c.bw.Flush()
}

// spliceable says whether resp's body may go to the client by splice: a
// plain body of a known, large length, which nothing flushes meanwhile
// (httputil.ReverseProxy flushes event streams and bodies of unknown
// length as they come).
func spliceable(req *http.Request, resp *http.Response) bool {
	if req.Method != http.MethodGet || resp.ContentLength < spliceMin || len(resp.TransferEncoding) > 0 ||
		len(resp.Trailer) > 0 || resp.Header.Get("Trailer") != "" {
		return false
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return false
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return ct != "text/event-stream"
}

// exchangeEnd settles one exchange's connection once its body ends.
type exchangeEnd struct {
	c    *agentConn
	stop func() bool
	werr chan error
	keep bool
	once sync.Once
}

// finish hands the connection back when the body was read to its end and
// the exchange left it clean, else closes it.
func (e *exchangeEnd) finish(clean bool) {
	e.once.Do(func() {
		if !e.stop() {
			clean = false // the client left: the deadline is set
		}
		writing := false
		if e.werr != nil {
			select {
			case err := <-e.werr:
				clean = clean && err == nil
			default:
				clean, writing = false, true // the body is still being sent
			}
		}
		if clean && e.keep {
			e.c.t.put(e.c)
			return
		}
		e.c.release()
		if writing {
			<-e.werr // the closed connection ends the write
		}
	})
}

// agentBody is an answer's body read through the connection's buffer.
type agentBody struct {
	rc  io.ReadCloser
	end *exchangeEnd
	eof bool
}

func (b *agentBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
		b.end.finish(true)
	}
	return n, err
}

func (b *agentBody) Close() error {
	if !b.eof {
		// An unread rest is not drained: the connection closes.
		b.end.finish(false)
	}
	return nil
}

// spliceBody is a large plain body sent straight from the agent's
// connection to the client's: its first Read sends the whole body, then
// answers io.EOF. The ReverseProxy has written the head into the
// ResponseWriter by then, and flushes nothing meanwhile (the body has a
// known length). With the client's TCP connection at hand (Server's
// ConnContext), the head is flushed and the body spliced between the two
// sockets by platform/splice, whose non-blocking calls keep the runtime
// from handing the goroutine's thread on at every megabyte; the server
// then closes that client connection after the answer (it did not count
// the body's bytes). Without it, the ResponseWriter's own ReadFrom splices.
type spliceBody struct {
	w      http.ResponseWriter
	client *net.TCPConn
	c      *agentConn
	left   int64
	end    *exchangeEnd
	done   bool
}

// connKey carries the client's connection in a request's context.
type connKey struct{}

// withConn is the Server's ConnContext.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*replayConn); ok {
		c = rc.Conn // handed over by the front
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

func (b *spliceBody) Read([]byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	b.done = true
	// What the head's read already buffered goes first.
	if n := b.c.br.Buffered(); n > 0 {
		if int64(n) > b.left {
			n = int(b.left)
		}
		buf, _ := b.c.br.Peek(n)
		if _, err := b.w.Write(buf); err != nil {
			b.end.finish(false)
			return 0, err
		}
		_, _ = b.c.br.Discard(n)
		b.left -= int64(n)
	}
	var n int64
	var err error
	if agent, ok := b.c.conn.(*net.TCPConn); ok && b.client != nil {
		if err = http.NewResponseController(b.w).Flush(); err == nil {
			n, err = splice.CopyN(b.client, agent, b.left)
		}
	} else {
		n, err = io.Copy(b.w, &io.LimitedReader{R: b.c.conn, N: b.left})
	}
	b.left -= n
	if err == nil && b.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		b.end.finish(false)
		return 0, err
	}
	b.end.finish(true)
	return 0, io.EOF
}

func (b *spliceBody) Close() error {
	b.end.finish(b.done && b.left == 0)
	return nil
}

// upgraded is the agent's side of a switched protocol (a WebSocket): what
// the head's read buffered, then the connection.
type upgraded struct {
	c   *agentConn
	end *exchangeEnd
}

func (u *upgraded) Read(p []byte) (int, error)  { return u.c.br.Read(p) }
func (u *upgraded) Write(p []byte) (int, error) { return u.c.conn.Write(p) }
func (u *upgraded) Close() error {
	u.end.finish(false)
	return nil
}
