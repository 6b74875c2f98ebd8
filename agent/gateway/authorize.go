package gateway

import (
	"net"

	"deckhand/platform"
)

// Request is the facts of one request an Authorizer decides on, with no
// HTTP stack in them: the proxy permissions evaluator takes facts in and
// gives a decision out, and tests build facts by hand.
type Request struct {
	Method string
	// Host is the Host header as the client sent it (port included).
	Host string
	// Path is the path as the client sent it (escaped form, no query);
	// Target.Path is what the service will see.
	Path string
	// RemoteIP is the peer of the connection. Forwarding headers never
	// change it: a client could forge them.
	RemoteIP net.IP
	// Header returns a request header's first value ("" when absent).
	Header func(name string) string
}

// Authorizer decides whether a request may reach its target. It returns
// nil to let it pass, or a *platform.Error (FORBIDDEN, UNAUTHORIZED) that
// the gateway renders. The proxy permissions evaluator replaces the default.
type Authorizer interface {
	Authorize(r Request, t Target) *platform.Error
}

// LoopbackOnly is the rule of operations.md for a container without a
// proxy permissions document: nothing passes except from loopback.
type LoopbackOnly struct{}

// Authorize lets loopback clients through.
func (LoopbackOnly) Authorize(r Request, t Target) *platform.Error {
	if r.RemoteIP != nil && r.RemoteIP.IsLoopback() {
		return nil
	}
	return &platform.Error{Code: platform.CodeForbidden, Details: t.Service,
		Message: "no proxy permissions document applies to this container: only loopback clients may pass the gateway"}
}
