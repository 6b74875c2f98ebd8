package tunnel

import (
	"context"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
	wire "github.com/deckhand-dev/deckhand/sdk/go/tunnelwire"
)

// upgrader does the handshake only (with the platform's error envelope);
// wire reads and writes the frames on the hijacked connection. gorilla
// refuses a client that sent bytes before the handshake completed, so the
// connection holds none buffered; its own buffers stay small and unused.
var upgrader = websocket.Upgrader{
	ReadBufferSize:  256,
	WriteBufferSize: 256,
	// The host's request policy checked Host and Origin before any route.
	CheckOrigin: func(*http.Request) bool { return true },
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		reqpolicy.WriteHTTPErrorStatus(w, status, fault.Errorf(fault.CodeBadRequest, "WebSocket handshake: %v", reason))
	},
}

// serveWS bridges one WebSocket to one connection to a local port. The
// port is dialled before the upgrade, so a refused or denied port is an
// ordinary HTTP answer (400, 403, 502) the client can show.
func (s *Service) serveWS(w http.ResponseWriter, r *http.Request, in TunnelQuery) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		reqpolicy.WriteHTTPError(w, fault.Errorf(fault.CodeBadRequest, "this endpoint needs a WebSocket upgrade (Upgrade: websocket)"))
		return
	}
	port := in.Port
	if err := s.checkAdmitted(r, port); err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	// Not r.Context(): the host recycles it once the upgrade hijacks.
	conn, target, err := s.dial(context.Background(), port)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	socket := platform.ConnFrom(r.Context()) // before the hijack recycles the context
	gws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		_ = conn.Close()
		return
	}
	ws := wire.Server(gws.NetConn(), socket)
	ss, err := s.open("websocket", port, target, s.clientAddr(r), func(reason string) {
		wire.Cut(ws, reason)
		_ = conn.Close()
	})
	if err != nil {
		wire.Cut(ws, "service stopping")
		_ = conn.Close()
		return
	}
	defer s.finish(ss)
	if err := wire.Bridge(ws, conn, s.set.PingInterval, wire.Counters{FromWS: ss.addIn, ToWS: ss.addOut}); err != nil {
		s.log.Debug("tunnel: session ended", "id", ss.ID, "port", port, "err", err)
	}
}

// Bindings lists the listening ports.
func (s *Service) Bindings(context.Context) BindingList {
	return BindingList{Bindings: s.scanner.list()}
}
