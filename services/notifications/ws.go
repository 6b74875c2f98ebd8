package notifications

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 16 << 10,
	// The host's request policy checked Host and Origin before any route.
	CheckOrigin: func(*http.Request) bool { return true },
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		reqpolicy.WriteHTTPErrorStatus(w, status, fault.Errorf(fault.CodeBadRequest, "WebSocket handshake: %v", reason))
	},
}

// closeTooSlow is the close code for a client that fell too far behind.
const closeTooSlow = 4000

type hello struct {
	Type   string `json:"type"`
	Seq    uint64 `json:"seq"`
	Oldest uint64 `json:"oldest"`
}

type gap struct {
	Type string `json:"type"`
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

type clientFrame struct {
	Type string   `json:"type"`
	IDs  []string `json:"ids"`
}

// serveStream is the WebSocket endpoint (Route.HTTP, so gorilla can hijack).
func (s *Service) serveStream(w http.ResponseWriter, r *http.Request, q StreamQuery) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		reqpolicy.WriteHTTPError(w, fault.Errorf(fault.CodeBadRequest, "this endpoint needs a WebSocket upgrade (Upgrade: websocket)"))
		return
	}
	since, display := q.Since, q.Display
	if display != "" {
		d, err := normalizeDisplay(display)
		if err != nil {
			reqpolicy.WriteHTTPError(w, fault.Invalid("display", "must be :N or agent, got %q", display))
			return
		}
		display = d
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetReadLimit(64 << 10)
	backlog, newest, oldest, sub := s.hub.subscribe(since)
	defer s.hub.unsubscribe(sub)

	// Reader: dismiss frames, and the end of the connection.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var f clientFrame
			if json.Unmarshal(data, &f) == nil && f.Type == "dismiss" {
				_, _ = s.dismiss(f.IDs)
			}
		}
	}()
	write := func(v any) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return conn.WriteJSON(v) == nil
	}
	if !write(hello{Type: "hello", Seq: newest, Oldest: oldest}) {
		return
	}
	// Messages after since that are no longer kept: say so.
	if since != 0 && oldest > since+1 {
		if !write(gap{Type: "gap", From: since + 1, To: oldest - 1}) {
			return
		}
	}
	send := func(m Message) bool {
		if display != "" && m.Notification.Display != display {
			return true
		}
		return write(m)
	}
	for _, m := range backlog {
		if !send(m) {
			return
		}
	}
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case m := <-sub.ch:
			if !send(m) {
				return
			}
		case <-sub.dropped:
			// Deliver what was queued, then tell the client to resume.
			for {
				select {
				case m := <-sub.ch:
					if !send(m) {
						return
					}
					continue
				default:
				}
				break
			}
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(closeTooSlow, "behind: reconnect with since"), time.Now().Add(time.Second))
			return
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second)) != nil {
				return
			}
		case <-gone:
			return
		case <-s.stop:
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "service stopping"), time.Now().Add(time.Second))
			return
		}
	}
}
