package gateway

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/platform/splice"
)

// Upgrade passes a WebSocket (any Upgrade) through: the rewritten request
// goes to the service on a connection of its own; when the service answers
// 101, its response goes to the client verbatim and the two connections are
// spliced until either side closes. Any other answer (a refusal, an error
// body) goes back as an ordinary response.
func (p *proxy) Upgrade(ctx *fasthttp.RequestCtx) {
	g, service := p.g, p.service
	up, err := net.DialTimeout("tcp", p.addr, 2*time.Second)
	if err != nil {
		g.backendError(ctx, service, err)
		return
	}
	ctx.Request.Header.ResetConnectionClose()
	ctx.Request.Header.SetProtocol("HTTP/1.1")
	_ = up.SetDeadline(time.Now().Add(headerTimeout))
	bw := bufio.NewWriter(up)
	err = ctx.Request.Header.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	br := bufio.NewReaderSize(up, 4096)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		_ = up.Close()
		g.backendError(ctx, service, err)
		return
	}
	_ = up.SetDeadline(time.Time{})
	if resp.StatusCode != http.StatusSwitchingProtocols {
		respond(ctx, resp, resp.Body, up)
		return
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 101 " + http.StatusText(http.StatusSwitchingProtocols) + "\r\n")
	_ = resp.Header.Write(&head)
	head.WriteString("\r\n")
	if n := br.Buffered(); n > 0 { // the service spoke first (a terminal's redraw)
		b, _ := br.Peek(n)
		head.Write(b)
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		_ = c.SetDeadline(time.Time{})
		if !g.track(c, up) {
			_ = up.Close()
			return
		}
		defer g.untrack(c)
		if _, err := c.Write(head.Bytes()); err != nil {
			_ = up.Close()
			return
		}
		spliceBoth(c, up)
	})
}

// spliceBoth copies both ways until either side ends, then closes both and
// returns once both copies have stopped: fasthttp recycles the hijacked
// connection (and its read buffer) when the handler returns, so no copy
// may still be reading it then.
func spliceBoth(client, service net.Conn) {
	// The client's own socket: fasthttp's wrapper only matters for reading
	// what it buffered from the client, and closing the wrapper does not
	// close the socket.
	socket := socketOf(client)
	var once sync.Once
	done := make(chan struct{}, 2)
	closeBothConns := func() {
		_ = socket.Close()
		_ = service.Close()
	}
	cp := func(dst, src net.Conn) {
		_, _ = splice.Copy(dst, src)
		once.Do(closeBothConns)
		done <- struct{}{}
	}
	go cp(service, client)
	// Service → client writes to the socket itself: TCP to TCP, the copy
	// splices, so the bytes never enter this process.
	cp(socket, service)
	<-done
	<-done
}

// track records an upgraded connection, and the gateway's own connection
// to the service for a spliced one (nil for one a service in this process
// took over), so Shutdown can close them; false when the gateway is
// already shutting down.
func (g *Gateway) track(client, service net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.tunnels[client] = service
	return true
}

func (g *Gateway) untrack(client net.Conn) {
	g.act.touch()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.tunnels, client)
}

// respond hands a response read from a connection of the gateway's own
// to the client: status, headers less the hop-by-hop ones, and body (read
// from body, which may hold what was already read of resp.Body), after
// which the connection closes.
func respond(ctx *fasthttp.RequestCtx, resp *http.Response, body io.Reader, up net.Conn) {
	ctx.SetStatusCode(resp.StatusCode)
	for k, vs := range resp.Header {
		for _, v := range vs {
			ctx.Response.Header.Add(k, v)
		}
	}
	for _, k := range dropResponse {
		ctx.Response.Header.Del(k)
	}
	ctx.Response.Header.SetNoDefaultContentType(true)
	ctx.Response.SetBodyStream(closeBoth{Reader: body, body: resp.Body, conn: up}, int(resp.ContentLength))
}

// closeBoth closes a service's response body and its connection together.
type closeBoth struct {
	io.Reader
	body io.Closer
	conn net.Conn
}

// Close never fails: the server would take an error for a failed write
// and drop the client's connection, and the service's connection may be
// closed already (an answer that came before the request body was sent).
func (c closeBoth) Close() error {
	_ = c.body.Close()
	_ = c.conn.Close()
	return nil
}

// Tunnels is how many upgraded connections the gateway is splicing now.
func (g *Gateway) Tunnels() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tunnels)
}
