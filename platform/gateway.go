package platform

import (
	"context"
	"net"

	"deckhand/platform/reqpolicy"
)

// AuthorizedPortHeader is set by the agent's gateway on a request its
// proxy permissions document admitted: the port the decision judged (a
// service's own, or for the tunnel service the tunnelled port). The
// gateway drops every copy a client sends, so a service may rely on it:
// the tunnel dials no other port for such a request. Absent when no
// document decided (no document, or a loopback client of a disabled
// proxy).
const AuthorizedPortHeader = "X-Deckhand-Authorized-Port"

// viaGatewayKey keeps, in a request's user values, what tells a request
// the agent's gateway sent from one a local caller made itself.
type viaGatewayKey struct{}

type viaGateway struct {
	dispatched bool
	trust      *reqpolicy.LocalTrust
	conn       net.Conn
}

// ViaGateway reports whether the request in ctx (a container service's
// request context, fiber or net/http) came through the agent's gateway:
// handed to the service's handler in-process, or on a connection of the
// agent's own user (LocalTrust.Own), the gateway proxying. Its
// X-Forwarded-* headers are then the gateway's account of the client.
func ViaGateway(ctx context.Context) bool {
	v, ok := ctx.Value(viaGatewayKey{}).(viaGateway)
	if !ok {
		return false
	}
	return v.dispatched || (v.trust != nil && v.trust.Own(v.conn))
}
