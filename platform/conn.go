package platform

import (
	"context"
	"net"
	"net/http"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
)

// connKey carries the socket a request arrived on to net/http route
// handlers. After a hijack they get the adaptor's wrapper, which has the
// socket's Read and Write but not its system calls, and a handler that
// splices (the tunnel's WebSocket) needs the socket itself.
type connKey struct{}

// connRef holds the socket in the request's user values: fasthttp closes
// every user value that is an io.Closer when the request ends, and the
// socket must outlive the request (keep-alive).
type connRef struct{ c net.Conn }

// ConnFrom is the socket the request arrived on (nil outside a Host's
// net/http route). Read it before a hijack: the host recycles the request
// context afterwards.
func ConnFrom(ctx context.Context) net.Conn {
	r, _ := ctx.Value(connKey{}).(connRef)
	return r.c
}

// httpHandler mounts a net/http handler: it sees the caller (principal,
// client IP) in its request's context and the socket (ConnFrom).
func (h *Host) httpHandler(hh http.Handler) fiber.Handler {
	if h.cfg.Auth != nil {
		hh = withCallerContext(hh)
	}
	serve := adaptor.HTTPHandler(headWhole(hh))
	return func(c fiber.Ctx) error {
		c.RequestCtx().SetUserValue(connKey{}, connRef{c.RequestCtx().Conn()})
		return serve(c)
	}
}

// headWhole has a HEAD's answer sent whole when its handler returns. The
// adaptor sends a flushed answer as a stream, and a HEAD's has no body to
// give its length: flushed before the handler returned (a reverse proxy
// flushes the head it got at once), it would lose the handler's
// Content-Length.
func headWhole(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w = noFlush{w}
		}
		next.ServeHTTP(w, r)
	})
}

// noFlush is a ResponseWriter whose flushes (http.ResponseController's)
// do nothing; Hijack and the rest reach the writer beneath.
type noFlush struct{ http.ResponseWriter }

func (noFlush) FlushError() error { return nil }

func (n noFlush) Unwrap() http.ResponseWriter { return n.ResponseWriter }
