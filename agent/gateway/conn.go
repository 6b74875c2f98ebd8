package gateway

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/valyala/fasthttp"

	"deckhand/platform/connlimit"
	"deckhand/platform/localtcp"
)

// clientConn is a connection the gateway accepted (Serve wraps its
// listener). It exists so the gateway sees a hijacked connection end: a
// WebSocket a service in this process took over on the client's own
// connection (direct.Upgrade) is a tunnel until fasthttp closes the
// connection after the service's hijack handler returns, or until
// Shutdown closes it.
type clientConn struct {
	net.Conn
	g      *Gateway
	tunnel atomic.Bool // counted in g.tunnels
	// slot: the connection holds one of g.limit's (given back once).
	slot atomic.Bool
}

// Close ends the connection and, for a tunnel, its entry in g.tunnels.
func (c *clientConn) Close() error {
	if c.tunnel.CompareAndSwap(true, false) {
		c.g.untrack(c)
	}
	if c.slot.CompareAndSwap(true, false) {
		c.g.limit.Release("")
	}
	return c.Conn.Close()
}

// SyscallConn gives the socket's descriptor when the connection is a plain
// socket, so a service writing to the hijacked connection (raw writev,
// splice) reaches it; a TLS connection has none and gets the error, so
// such a writer falls back to the connection's own Write.
func (c *clientConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoSyscallConn
}

// ReadFrom keeps the socket's sendfile and splice for bodies the server
// copies from a file or another socket.
func (c *clientConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// errNoSyscallConn: the connection under a clientConn is not a socket
// (TLS, or a conn made in memory).
var errNoSyscallConn = &net.OpError{Op: "syscallconn", Net: "tcp", Err: syscall.EOPNOTSUPP}

// clientListener wraps each accepted connection in a clientConn. It
// never hands fasthttp an error but the listener's close: out of
// descriptors (EMFILE, ENFILE) it waits and accepts again, where fasthttp
// would stop serving and the agent with it. Above the gateway's cap a
// connection is closed as soon as it is accepted (a reset), so a flood of
// idle connections cannot take every descriptor the agent has.
type clientListener struct {
	net.Listener
	g *Gateway
}

func (l clientListener) Accept() (net.Conn, error) {
	var b connlimit.Backoff
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if connlimit.Fatal(err) {
				return nil, err
			}
			l.g.warnEvery("gateway accept failing; retrying", "err", err)
			b.Wait(nil)
			continue
		}
		b.Reset()
		if !l.g.limit.Acquire("") {
			l.g.warnEvery("gateway connection cap reached; new connections are closed at once", "cap", l.g.limit.Total)
			connlimit.Refuse(c)
			continue
		}
		localtcp.Tune(c)
		cc := &clientConn{Conn: c, g: l.g}
		cc.slot.Store(true)
		return cc, nil
	}
}

// socketOf is the connection to copy to and from directly: under
// fasthttp's hijacked connection (which matters only for reading what it
// buffered from the client) and under the gateway's own clientConn, as
// long as that is a plain socket.
func socketOf(c net.Conn) net.Conn {
	if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
		if inner := u.UnsafeConn(); inner != nil {
			c = inner
		}
	}
	if cc, ok := c.(*clientConn); ok {
		if _, plain := cc.Conn.(*net.TCPConn); plain {
			return cc.Conn
		}
	}
	return c
}

// ownConn is the request's connection when the gateway accepted it itself
// (Serve), nil when the gateway's handler runs on another server: only on
// its own connections does the gateway see a hijacked one close.
func ownConn(ctx *fasthttp.RequestCtx) *clientConn {
	cc, _ := ctx.Conn().(*clientConn)
	return cc
}
