package tunnel

import (
	"context"
	"net/http"
	"strconv"

	"deckhand/platform/fault"
)

// SessionRef names a forwarded connection in the path.
type SessionRef struct {
	ID string `path:"session_id" doc:"the session's id"`
}

// TunnelQuery is the WebSocket tunnel's handshake query.
type TunnelQuery struct {
	Port int `query:"port" required:"true" minimum:"1" maximum:"65535" doc:"the TCP port inside the container"`
}

// ProxyRoot is a request for /proxy/{port} without the trailing slash.
type ProxyRoot struct {
	Port string `path:"port" doc:"the TCP port inside the container, 1-65535 in decimal"`
}

// ProxyRequest is a request the reverse proxy forwards.
type ProxyRequest struct {
	Port string `path:"port" doc:"the TCP port inside the container, 1-65535 in decimal"`
	Path string `path:"path" doc:"the path on the app (after /proxy/{port}/)"`
}

// ValidateParams checks the port: decimal digits only (no sign, no
// leading zero), so one port has one prefix.
func (in ProxyRequest) ValidateParams() error {
	_, err := proxyPort(in.Port)
	return err
}

func proxyPort(s string) (int, error) {
	port, err := strconv.Atoi(s)
	if err != nil || port < 1 || port > 65535 || s != strconv.Itoa(port) {
		return 0, fault.Invalid("port", "must be an integer from 1 to 65535, got %q", s)
	}
	return port, nil
}

// NoInput is the input of a stream without parameters.
type NoInput struct{}

// ListBindings answers the TCP ports listening in the container.
func (s *Service) ListBindings(ctx context.Context) (BindingList, error) { return s.Bindings(ctx), nil }

// ListSessions answers the forwarded connections open now.
func (s *Service) ListSessions(ctx context.Context) (SessionList, error) { return s.Sessions(ctx), nil }

// ListTunnels answers the open sessions grouped by target.
func (s *Service) ListTunnels(ctx context.Context) (TunnelList, error) { return s.Tunnels(ctx), nil }

// CutSession closes both ends of a session and answers its final record.
func (s *Service) CutSession(ctx context.Context, in SessionRef) (Session, error) {
	return s.Cut(ctx, in.ID)
}

// serveMetrics writes the Prometheus exposition.
func (s *Service) serveMetrics(h http.Handler) func(http.ResponseWriter, *http.Request, NoInput) {
	return func(w http.ResponseWriter, r *http.Request, _ NoInput) { h.ServeHTTP(w, r) }
}
