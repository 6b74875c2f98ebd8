package terminal

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/platform/fault"
	"deckhand/platform/reqpolicy"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize: 4096,
	// Frames are written from a pooled buffer, so attached-but-quiet clients
	// hold none.
	WriteBufferSize: 64 << 10,
	WriteBufferPool: &sync.Pool{},
	// The host's request policy checked Host and Origin before any route
	// (reqpolicy.RequestPolicy), where the error is a proper 403 body.
	CheckOrigin: func(*http.Request) bool { return true },
	// A handshake gorilla refuses (no Sec-WebSocket-Key, wrong version)
	// gets the service's error body too, not gorilla's plain text.
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		reqpolicy.WriteHTTPErrorStatus(w, status, fault.Errorf(fault.CodeBadRequest, "WebSocket handshake: %v", reason))
	},
}

// serveWS is the WebSocket endpoint, a net/http handler (Route.HTTP) so
// gorilla can hijack the connection. The host has already applied the
// request policy and parsed the declared query (platform.QueryFrom); the
// session is found or created before the upgrade, so every refusal is an
// ordinary HTTP answer with the service's error body.
func (svc *Service) serveWS(w http.ResponseWriter, r *http.Request, q AttachQuery) {
	sess, created, err := svc.wsTarget(r, q)
	if err != nil {
		reqpolicy.WriteHTTPError(w, err)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		// upgrader.Error has answered.
		if created {
			go func() { _ = svc.remove(context.Background(), sess.id) }()
		}
		return
	}
	defer conn.Close()
	conn.SetReadLimit(1 << 20)
	_ = conn.SetReadDeadline(time.Time{})
	cl := newClient(conn, svc.opt.ClientQueue, svc.opt.PingInterval, svc.opt.DropGrace, sess.drained)
	conn.SetPongHandler(func(string) error { cl.seen(); return nil })
	sess.attach(cl)
	go cl.writeLoop()
	for {
		mt, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		cl.seen()
		switch mt {
		case websocket.BinaryMessage:
			sess.input(data)
		case websocket.TextMessage:
			svc.control(sess, cl, data)
		}
	}
	sess.detach(cl)
	close(cl.stop)
	<-cl.done
}

// wsTarget is the session a handshake attaches to: the one named by id
// (resized when cols and rows are both given), or a new one.
func (svc *Service) wsTarget(r *http.Request, q AttachQuery) (sess *Session, created bool, err error) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return nil, false, fault.Errorf(fault.CodeBadRequest, "this endpoint needs a WebSocket upgrade (Upgrade: websocket)")
	}
	cols, rows := q.Cols, q.Rows
	if id := q.ID; id != "" {
		if sess, err = svc.get(id); err != nil {
			return nil, false, err
		}
		if cols != nil && rows != nil {
			if err := sess.resize(*cols, *rows); err != nil {
				return nil, false, err
			}
		}
		return sess, false, nil
	}
	req := CreateRequest{Shell: q.Shell, Cwd: q.Cwd, Cols: cols, Rows: rows}
	if err := req.Validate(); err != nil {
		return nil, false, err
	}
	if sess, err = svc.create(req); err != nil {
		return nil, false, err
	}
	return sess, true, nil
}

// controlMessage is a client's JSON text frame.
type controlMessage struct {
	Type string `json:"type"`
	Cols *int   `json:"cols"`
	Rows *int   `json:"rows"`
}

// control applies a JSON control message; bad ones get an error frame and
// the session carries on.
func (svc *Service) control(sess *Session, cl *client, data []byte) {
	var m controlMessage
	if err := json.Unmarshal(data, &m); err != nil {
		cl.text(errorMessage{Type: "error", Message: "malformed control message: expected JSON such as {\"type\":\"resize\",\"cols\":80,\"rows\":24}"})
		return
	}
	switch m.Type {
	case "resize":
		if m.Cols == nil || m.Rows == nil {
			cl.text(errorMessage{Type: "error", Message: "resize: cols and rows are required"})
			return
		}
		if err := sess.resize(*m.Cols, *m.Rows); err != nil {
			cl.text(errorMessage{Type: "error", Message: "resize: " + fault.AsError(err).Message})
		}
	default:
		cl.text(errorMessage{Type: "error", Message: "unknown control message type " + strconv.Quote(m.Type) + " (known: resize)"})
	}
}
