package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// backend calls an operation of the agent's other services that is no
// tool (a file's bytes, a stream, a display's screenshot) on its loopback
// port for a caller, handing on the caller's identity headers; a route
// tool runs in memory instead (routetools.go).
type backend struct{ sc *platform.ServiceClient }

func newBackend(host string, base int, offsets map[string]int) *backend {
	return &backend{sc: platform.NewServiceClient(host, base, offsets)}
}

func (b *backend) close() { b.sc.Close() }

// call is one request to a service (platform.ServiceCall without the
// caller).
type call struct {
	method, service, path string
	query                 url.Values
	body                  any
	header                http.Header
}

// of is c sent for who.
func (c call) of(who caller) platform.ServiceCall {
	return platform.ServiceCall{Method: c.method, Service: c.service, Path: c.path, Query: c.query, Body: c.body,
		Header: who.forward(c.header)}
}

func (b *backend) do(ctx context.Context, who caller, c call) (*http.Response, error) {
	return b.sc.Do(ctx, c.of(who))
}

func (b *backend) json(ctx context.Context, who caller, c call, out any) error {
	return b.sc.JSON(ctx, c.of(who), out)
}

// bytes reads at most limit bytes of c's answer (no caller reads the
// answer's header: it is always nil).
func (b *backend) bytes(ctx context.Context, who caller, c call, limit int64) ([]byte, http.Header, error) {
	raw, err := b.sc.Bytes(ctx, c.of(who), limit)
	return raw, nil, err
}

// errorText is what a tool answers for err: the code and the message,
// never a Go error's internals for an unknown error.
func errorText(err error) string {
	var pe *fault.Error
	if errors.As(err, &pe) {
		s := pe.Code + ": " + pe.Message
		if pe.Details != "" {
			s += " (" + pe.Details + ")"
		}
		return s
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "CANCELLED: the call was cancelled"
	}
	return "ERROR: " + err.Error()
}
