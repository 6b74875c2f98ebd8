package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/platform/clientip"
)

// Hop-by-hop headers (RFC 9110 7.6.1) and the ones the gateway owns: none
// of the client's copies reaches a service. Tokens a client lists in
// Connection are deliberately not honoured: naming Origin, Cookie or
// Sec-Fetch-Site there must not make an end-to-end header vanish before the
// service checks it.
var dropRequest = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade", "Expect", "Forwarded", "X-Forwarded-For",
	"X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Prefix", "X-Real-Ip"}

// dropResponse are a service's hop-by-hop response headers.
var dropResponse = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Trailer", "Upgrade"}

// rewrite turns the client's request, in place, into the one the service
// gets: the service's path and query, Host = the service's address, the
// gateway's own X-Forwarded-*, no hop-by-hop headers. The request target
// is set verbatim (escaped form), never re-encoded.
func (g *Gateway) rewrite(ctx *fasthttp.RequestCtx, addr, path, query, prefix string) {
	h := &ctx.Request.Header
	var client string
	if g.cfg.TrustProxyHeaders {
		client = forwardedClient(ctx.RemoteIP(), h.PeekAll("X-Forwarded-For"))
	} else {
		client = ctx.RemoteIP().String()
	}
	proto := "http"
	if ctx.IsTLS() {
		proto = "https"
	}
	host := string(h.Host())
	upgrade := isUpgrade(h)
	var up []byte
	if upgrade {
		up = append(up, h.Peek("Upgrade")...)
	}
	for _, k := range dropRequest {
		h.Del(k)
	}
	if upgrade {
		h.SetBytesV("Upgrade", up)
		h.Set("Connection", "Upgrade")
	}
	if query != "" {
		ctx.Request.SetRequestURI(path + "?" + query)
	} else {
		ctx.Request.SetRequestURI(path)
	}
	h.SetHost(addr)
	ctx.Request.UseHostHeader = true
	h.Set("X-Forwarded-For", client)
	h.Set("X-Forwarded-Host", host)
	h.Set("X-Forwarded-Proto", proto)
	if prefix != "" {
		// Where the service sits under path routing, so a web page it
		// serves can build links that come back through the gateway.
		h.Set("X-Forwarded-Prefix", prefix)
	}
}

// proxy is the transport to a service's own server at addr: the path of
// an isolated service, and of a request a service in this process would
// not take in place (InProcess.takes). Serve is here, Upgrade in
// upgrade.go.
type proxy struct {
	g       *Gateway
	service string
	addr    string
	// hc is the keep-alive pool to addr, shared by every lane to it.
	hc *fasthttp.HostClient
}

// Serve passes a plain request. A body still arriving from the client
// goes on a connection of its own, so that an answer the service gives
// before reading it reaches the client (forwardStreamed); any other
// request takes the pool (forward).
func (p *proxy) Serve(ctx *fasthttp.RequestCtx, clientClose bool) {
	if ctx.Request.IsBodyStream() && ctx.Request.Header.ContentLength() != 0 {
		p.forwardStreamed(ctx)
		return
	}
	p.forward(ctx, clientClose)
}

// forward sends the rewritten request to the service on a pooled
// keep-alive connection and hands its response to the server, which
// writes it out: small bodies from memory, larger and chunked ones streamed
// from the service's connection as they come (the connection goes back to
// the pool when the body has been copied).
func (p *proxy) forward(ctx *fasthttp.RequestCtx, clientClose bool) {
	req := &ctx.Request
	req.Header.ResetConnectionClose()
	req.Header.SetProtocol("HTTP/1.1")
	if req.IsBodyStream() {
		// The header had headerTimeout; an upload takes as long as it takes.
		_ = ctx.Conn().SetReadDeadline(time.Time{})
	}
	if clientClose {
		defer ctx.SetConnectionClose()
	}
	if err := p.hc.Do(req, &ctx.Response); err != nil {
		p.g.backendError(ctx, p.service, err)
		return
	}
	rh := &ctx.Response.Header
	rh.ResetConnectionClose() // the service's connection is the pool's business
	for _, k := range dropResponse {
		rh.Del(k)
	}
	rh.SetNoDefaultContentType(true)
}

// earlyAnswerLimit is how much of a service's answer the gateway holds
// when it comes before the request body was all sent (the rest of the
// body is then read away: lingerLimit).
const earlyAnswerLimit = 64 << 10

// forwardStreamed sends a request whose body streams from the client
// (chunked, or larger than the read buffer) to the service on a
// connection of its own, and reads the service's answer while the body is
// still going: a route may answer before reading the body (a refused
// path, a method it does not take) and close, and that answer, not a
// broken pipe's 502, is what the client gets. The rest of such a body is
// read away (lingerLimit) or the client's connection closes after the
// answer: leftover body bytes are never parsed as a request.
func (p *proxy) forwardStreamed(ctx *fasthttp.RequestCtx) {
	g, service := p.g, p.service
	up, err := net.DialTimeout("tcp", p.addr, 2*time.Second)
	if err != nil {
		g.backendError(ctx, service, err)
		ctx.SetConnectionClose()
		return
	}
	req := &ctx.Request
	cl := req.Header.ContentLength()
	// The service's copy of the header: the client's own still says
	// whether the client keeps its connection.
	hdr := &fasthttp.RequestHeader{}
	req.Header.CopyTo(hdr)
	hdr.SetProtocol("HTTP/1.1")
	hdr.SetConnectionClose() // one request on this connection
	hdr.SetContentLength(cl) // -1: Transfer-Encoding: chunked
	// The header had headerTimeout; an upload takes as long as it takes.
	_ = ctx.Conn().SetReadDeadline(time.Time{})
	body := &eofReader{r: ctx.RequestBodyStream()}
	sent := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(up, 32<<10)
		err := hdr.Write(bw)
		if err == nil {
			err = copyBody(bw, body, cl)
		}
		if err == nil {
			err = bw.Flush()
		}
		sent <- err
	}()
	// abandon stops sending the body to the service and waits for the
	// copy to end (nothing may read the client's request once this
	// handler returns), then reads the rest of the body away, or has the
	// client's connection closed after the answer.
	linger := func() {
		if !body.drain(lingerLimit) {
			ctx.SetConnectionClose()
		}
	}
	abandon := func() {
		_ = up.Close()
		_ = ctx.Conn().SetReadDeadline(time.Now().Add(lingerTimeout))
		<-sent
		linger()
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(up, 4096), &http.Request{Method: string(req.Header.Method())})
	if err != nil {
		abandon()
		g.backendError(ctx, service, err)
		return
	}
	select {
	case err := <-sent:
		if err != nil {
			// The service closed while the body was still going: the
			// rest of it is read away.
			_ = ctx.Conn().SetReadDeadline(time.Now().Add(lingerTimeout))
			linger()
		}
		respond(ctx, resp, resp.Body, up)
		return
	default:
	}
	// The service answered before the whole body was sent.
	head, err := io.ReadAll(io.LimitReader(resp.Body, earlyAnswerLimit+1))
	if err == nil && len(head) <= earlyAnswerLimit {
		abandon()
		respond(ctx, resp, bytes.NewReader(head), up)
		return
	}
	// A long answer while the body still goes: the service reads and
	// answers at once; the body finishes first.
	timer := time.NewTimer(headerTimeout)
	defer timer.Stop()
	select {
	case serr := <-sent:
		if err == nil && serr == nil {
			respond(ctx, resp, io.MultiReader(bytes.NewReader(head), resp.Body), up)
			return
		}
		_ = up.Close()
		ctx.SetConnectionClose()
		g.backendError(ctx, service, errors.Join(err, serr))
	case <-timer.C:
		abandon()
		ctx.SetConnectionClose()
		g.backendError(ctx, service, errors.New("the service answered at length without reading the request body"))
	}
}

// eofReader remembers that a request body reached its end: a chunked
// body read once more would take the next request's bytes for a chunk.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	if e.eof {
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		e.eof = true
	}
	return n, err
}

// drain reads the rest of the body away, at most limit bytes; it reports
// whether the body ended (the connection's next bytes are a request).
func (e *eofReader) drain(limit int64) bool {
	n, err := io.CopyN(io.Discard, e, limit+1)
	return n <= limit && errors.Is(err, io.EOF)
}

// copyBody writes a request body of length cl (-1: chunked) to w.
func copyBody(w *bufio.Writer, body io.Reader, cl int) error {
	if cl >= 0 {
		n, err := io.CopyN(w, body, int64(cl))
		if err == nil && n != int64(cl) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	cw := httputil.NewChunkedWriter(w)
	if _, err := io.Copy(cw, body); err != nil {
		return err
	}
	if err := cw.Close(); err != nil {
		return err
	}
	_, err := w.WriteString("\r\n") // no trailers
	return err
}

// clientLocked is the connection pool to one service address; the
// caller holds g.mu.
func (g *Gateway) clientLocked(addr string) *fasthttp.HostClient {
	if hc, ok := g.clients[addr]; ok {
		return hc
	}
	hc := &fasthttp.HostClient{
		Addr:                     addr,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true, // the service sees the client's escaped path
		StreamResponseBody:       true,
		// Bodies up to this size are read whole (one copy, connection back
		// to the pool at once); anything larger or chunked is streamed.
		MaxResponseBodySize: 64 << 10,
		ReadBufferSize:      maxHeaderBytes,
		// Idle connections go before the services' own 120 s idle timeout.
		MaxIdleConnDuration: 60 * time.Second,
		// Each stream, long poll and upload holds one connection.
		MaxConns:           1 << 16,
		MaxConnWaitTimeout: 5 * time.Second,
		Dial: func(addr string) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, 2*time.Second)
		},
	}
	g.clients[addr] = hc
	return hc
}

// isUpgrade reports a request to switch protocols (WebSocket): an Upgrade
// header and the upgrade token in Connection.
func isUpgrade(h *fasthttp.RequestHeader) bool {
	if len(h.Peek("Upgrade")) == 0 {
		return false
	}
	for _, v := range h.PeekAll("Connection") {
		for _, tok := range bytes.Split(v, []byte(",")) {
			if bytes.EqualFold(bytes.TrimSpace(tok), []byte("upgrade")) {
				return true
			}
		}
	}
	return false
}

// forwardedClient is the client address behind a trusted proxy, by the
// rule of package clientip (right-most hop of every X-Forwarded-For line,
// only a bare IP, only from a nearby peer; else the peer).
func forwardedClient(peer net.IP, xff [][]byte) string {
	if ip := clientip.Resolve(clientip.FromIP(peer), xff); ip.IsValid() {
		return ip.String()
	}
	return peer.String()
}
