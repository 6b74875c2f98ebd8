package platform

import (
	"context"
	"net"
)

// connKey carries the socket a request arrived on to net/http route
// handlers. After a hijack they get the adaptor's wrapper, which has the
// socket's Read and Write but not its system calls, and a handler that
// splices (the tunnel's WebSocket) needs the socket itself.
type connKey struct{}

// ConnFrom is the socket the request arrived on (nil outside a Host's
// net/http route). Read it before a hijack: the host recycles the request
// context afterwards.
func ConnFrom(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	return c
}
