package gateway

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// InProcess is a service the agent runs in its own process, as the gateway
// may call it: its Fiber app's request handler and the limits its own
// server applies to a request before the handler sees it. The gateway
// calls the handler with the client's *fasthttp.RequestCtx, rewritten as
// for the proxy, instead of a second parse on a loopback connection; a
// request the service's own server might refuse for its size (a header
// block over its read buffer, a body over its BodyLimit, or chunked for a
// service that reads bodies whole) goes through the proxy, so that server
// applies its own limits to it.
//
// The service's Host trusts the gateway's decision:
// reqpolicy.MarkGatewayDispatch marks the request (nothing a client sends
// can set that mark), and the Host judges neither the peer nor Host and
// Origin a second time on facts the rewrite changed (a client addressing
// the agent by IP would otherwise be refused 421 there). On a proxied
// connection the Host checks the gateway's X-Forwarded-Host again, taking
// any address of the machine for an IP literal (the gateway took it as the
// address the client connected to). One fact differs by design: the
// connection's peer is the client, so platform.ClientIP is the gateway's
// view of the client (the X-Forwarded-For it sets) with or without
// --trust-proxy-headers, where a proxied service without the flag sees the
// gateway, 127.0.0.1. The service's own port, and its policy there, are
// untouched. A body a handler leaves unread is read away (up to 256 MiB in
// 5 s) or the connection closes, so leftover bytes are never parsed as a
// request. A stopped service has no handler, and the proxy answers 502; a
// restarted one is called through its new InProcess.
type InProcess struct {
	handler fasthttp.RequestHandler
	// localIP is the address the service listens on: a proxied request
	// arrives there, and the service's request policy judges by it.
	localIP net.IP
	// streams: the service's server streams request bodies
	// (contract.BodyStreamer); else it reads a body whole, up to bodyLimit.
	streams     bool
	bodyLimit   int
	readTimeout time.Duration
	// headerLimit is the service server's read buffer: the largest
	// request line and header block it takes.
	headerLimit int
}

// bodyTimeout is how long the service's own server gives a request body:
// the read timeout it sets once the header is in, else its ReadTimeout
// (which then covers the header too).
func bodyTimeout(srv *fasthttp.Server) time.Duration {
	if srv.HeaderReceived != nil {
		if rc := srv.HeaderReceived(&fasthttp.RequestHeader{}); rc.ReadTimeout > 0 {
			return rc.ReadTimeout
		}
	}
	return srv.ReadTimeout
}

// NewInProcess prepares app, served on its own listener at addr, for
// dispatch by the gateway. Call it before app serves (it builds the route
// tree that serving would build).
func NewInProcess(app *fiber.App, addr net.Addr) *InProcess {
	cfg := app.Config()
	app.Handler() // builds the route tree
	// The server's handler, not Fiber's: the host wraps it (methods the
	// router does not know are answered by the host's kernel).
	srv := app.Server()
	d := &InProcess{handler: srv.Handler, streams: cfg.StreamRequestBody, bodyLimit: cfg.BodyLimit,
		readTimeout: bodyTimeout(srv), headerLimit: cfg.ReadBufferSize}
	if a, ok := addr.(*net.TCPAddr); ok {
		d.localIP = a.IP
	}
	if d.bodyLimit <= 0 {
		d.bodyLimit = fasthttp.DefaultMaxRequestBodySize
	}
	if d.headerLimit <= 0 {
		d.headerLimit = 4096 // fasthttp's default read buffer
	}
	return d
}

// forwardedSlack bounds what rewrite adds to a request's header block
// (X-Forwarded-* and Host), so a request close to the service's header
// limit takes the proxy, where the service's own server applies that limit.
const forwardedSlack = 512

// takes reports whether the request can skip the service's own server:
// its header block fits that server's buffer, its body (if any) has a
// declared length and, for a service that reads bodies whole, that length
// is within its limit (a larger one goes through the proxy and gets that
// server's 413). Call it before rewrite.
func (d *InProcess) takes(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	if len(h.RawHeaders())+len(h.RequestURI())+forwardedSlack > d.headerLimit {
		return false
	}
	// -1 is a chunked body: the proxy copies it whole. Here, once a
	// handler has read it to its end, nothing tells whether it has (a
	// further read would parse the next request as a chunk size), so the
	// leftover could not be drained safely.
	cl := h.ContentLength()
	if cl == -1 {
		return false
	}
	// -2: no body (a GET without Content-Length).
	return d.streams || cl == -2 || cl <= d.bodyLimit
}

// lingerLimit and lingerTimeout bound how much of a request body a
// service left unread (it answered first) the gateway reads away before
// answering, so the client, still sending, gets the answer (closing on
// unread bytes would reset the connection under it, and most clients
// then report the reset, not the answer) and the connection stays usable;
// past either, the connection closes after the answer.
const (
	lingerLimit   = 256 << 20
	lingerTimeout = 5 * time.Second
)

// direct is the transport to a service in this process: its handler runs
// on the client's own *fasthttp.RequestCtx and connection.
type direct struct {
	g       *Gateway
	service string
	in      *InProcess
}

// Serve runs the request through the service's handler on the client's
// own connection. The request is already past the gateway's policy and
// authorizer, and rewritten (path, Host, X-Forwarded-*) as for the proxy.
func (t *direct) Serve(ctx *fasthttp.RequestCtx, clientClose bool) {
	d := t.in
	if hasBody(ctx) {
		// The body gets the service server's read timeout, not the
		// gateway's header timeout.
		deadline := time.Time{}
		if d.readTimeout > 0 {
			deadline = time.Now().Add(d.readTimeout)
		}
		_ = ctx.Conn().SetReadDeadline(deadline)
		if !d.streams && !t.readBody(ctx) {
			return
		}
	}
	reqpolicy.MarkGatewayDispatch(ctx, d.localIP)
	if !t.call(ctx) || ctx.Hijacked() {
		return // answered, or the handler owns the connection now
	}
	rh := &ctx.Response.Header
	closing := rh.ConnectionClose()
	for _, k := range dropResponse {
		rh.Del(k)
	}
	// The rest of an unread body is read away even when the connection
	// closes after the answer: closing on unread bytes would reset it
	// under a client still sending.
	if !drained(ctx) || closing || clientClose {
		ctx.SetConnectionClose()
	}
}

// call runs the service's handler. The service's Host recovers a panic in
// a route; one in Fiber itself would otherwise take the whole agent down
// from the gateway's worker, so it becomes a 502 and a closed connection.
func (t *direct) call(ctx *fasthttp.RequestCtx) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			t.g.backendError(ctx, t.service, fmt.Errorf("panic: %v", p))
			ctx.SetConnectionClose()
			ok = false
		}
	}()
	t.in.handler(ctx)
	return true
}

// Upgrade passes an upgrade to the service on the client's own
// connection: the service's handler answers the handshake and hijacks the
// connection, so its frames go to the client's socket with no loopback
// connection and no splice between. The connection is a tunnel from the
// call on (Tunnels, Shutdown) and until it closes, which fasthttp does
// once the service's hijack handler returns (clientConn.Close); a
// handshake the service refuses is an ordinary answer, after which the
// connection closes, as on the proxied path. choose gives this transport
// an Upgrade only on a connection the gateway accepted (ownConn).
func (t *direct) Upgrade(ctx *fasthttp.RequestCtx) {
	g := t.g
	cc := ownConn(ctx)
	if !g.track(cc, nil) {
		reqpolicy.WriteFastError(ctx, 0, &fault.Error{Code: fault.CodeUnavailable,
			Message: "the gateway is shutting down", Details: t.service})
		ctx.SetConnectionClose()
		return
	}
	cc.tunnel.Store(true)
	// A WebSocket has no deadline (the proxied path clears it too); the
	// header's read deadline must not end it.
	_ = cc.SetDeadline(time.Time{})
	t.Serve(ctx, true)
	if !ctx.Hijacked() && cc.tunnel.CompareAndSwap(true, false) {
		g.untrack(cc)
	}
}

// readBody reads a body of declared length (at most the service's limit,
// see takes) into memory before the handler runs, as the service's own
// server does; false when the client did not send it (the connection
// closes with 400 or 408, as that server answers).
func (t *direct) readBody(ctx *fasthttp.RequestCtx) bool {
	want := ctx.Request.Header.ContentLength()
	buf := make([]byte, want)
	_, err := io.ReadFull(ctx.RequestBodyStream(), buf)
	if err == nil {
		ctx.Request.SetBodyRaw(buf)
		return true
	}
	e := &fault.Error{Code: fault.CodeBadRequest, Details: "body", Message: "the request body ended before its Content-Length"}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		e = &fault.Error{Code: fault.CodeTimeout, Details: "body", Message: "the request body did not arrive in time"}
	}
	t.g.cfg.Logger.Debug("gateway: request body not read", "service", t.service, "err", err)
	reqpolicy.WriteFastError(ctx, 0, e)
	ctx.SetConnectionClose()
	return false
}

// drained reports whether the request's body has been read to its end, so
// the next bytes on the connection are the next request. A handler that
// answered without reading an upload leaves the rest on the connection;
// the gateway reads it away (lingerLimit) and otherwise closes: leftover
// body bytes must never be taken for a request.
func drained(ctx *fasthttp.RequestCtx) bool {
	if !hasBody(ctx) {
		return true
	}
	_ = ctx.Conn().SetReadDeadline(time.Now().Add(lingerTimeout))
	return (&eofReader{r: ctx.RequestBodyStream()}).drain(lingerLimit)
}

// hasBody: a body of declared length may still be coming from the client
// (the server streams every body; most requests have none; chunked ones
// are proxied, see takes).
func hasBody(ctx *fasthttp.RequestCtx) bool {
	return ctx.Request.IsBodyStream() && ctx.Request.Header.ContentLength() > 0
}
