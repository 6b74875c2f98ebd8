package gateway

import (
	"bytes"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

// ServeInMemory runs rc, a request another service of this process built
// in memory (rc.Request filled in, nothing else), through the service's
// handler without a socket. The request is judged as one on the service's
// own port: it is not marked as the gateway's dispatch, so the service's
// request policy decides on its Host and Origin with the service's
// listening address as the local end, and its peer is loopback. It
// answers false, running nothing, for a body over the service's limit:
// the caller then sends it to the port, where the service's server
// refuses it as it refuses any. The caller reads rc.Response (a streamed
// body included) and then releases rc's user values (ResetUserValues),
// as a server does when a request ends.
func (d *InProcess) ServeInMemory(rc *fasthttp.RequestCtx) (ok bool) {
	body := rc.Request.Body()
	if !d.streams && len(body) > d.bodyLimit {
		return false
	}
	rc.Init2(&memConn{local: d.addr}, discardLogger{}, false)
	if d.streams && len(body) > 0 {
		// A streaming server hands its handlers the body as a stream.
		rc.Request.SetBodyStream(bytes.NewReader(bytes.Clone(body)), len(body))
	}
	defer func() {
		// The service's Host recovers a panic in a route; one in Fiber
		// itself must not take the caller's goroutine (and the agent) down.
		if p := recover(); p != nil {
			reqpolicy.WriteFastError(rc, http.StatusBadGateway, &fault.Error{Code: fault.CodeBackend, Message: "the service failed on the request"})
		}
	}()
	d.handler(rc)
	return true
}

// memConn is the connection a request made in memory shows its handler:
// local and remote addresses only; it carries no bytes.
type memConn struct{ local net.Addr }

var memPeer = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}

func (c *memConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (c *memConn) Write(b []byte) (int, error)      { return 0, net.ErrClosed }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return c.local }
func (c *memConn) RemoteAddr() net.Addr             { return memPeer }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
