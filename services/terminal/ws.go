package terminal

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/gorilla/websocket"

	"deckhand/platform"
)

type sessionKeyType string

const sessionKey sessionKeyType = "terminal.session"

var upgrader = websocket.Upgrader{
	ReadBufferSize: 4096,
	// Frames are written from a pooled buffer, so attached-but-quiet clients
	// hold none.
	WriteBufferSize: 64 << 10,
	WriteBufferPool: &sync.Pool{},
	// The host's request policy checked Host and Origin before any route
	// (platform.RequestPolicy), where the error is a proper 403 body.
	CheckOrigin: func(*http.Request) bool { return true },
}

// handleWS validates the request in Fiber (so errors have the service's
// error body), then hands the connection to gorilla through the adaptor.
func (svc *Service) handleWS(c fiber.Ctx) error {
	if !strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket") {
		return platform.Errorf(platform.CodeBadRequest, "this endpoint needs a WebSocket upgrade (Upgrade: websocket)")
	}
	cols, err := optionalSize(c, "cols", maxCols)
	if err != nil {
		return err
	}
	rows, err := optionalSize(c, "rows", maxRows)
	if err != nil {
		return err
	}
	var sess *Session
	created := false
	if id := c.Query("id"); id != "" {
		if sess, err = svc.get(id); err != nil {
			return err
		}
		if cols != nil && rows != nil {
			if err := sess.resize(*cols, *rows); err != nil {
				return err
			}
		}
	} else {
		req := CreateRequest{Shell: c.Query("shell"), Cwd: c.Query("cwd"), Cols: cols, Rows: rows}
		if err := req.Validate(); err != nil {
			return err
		}
		if sess, err = svc.create(req); err != nil {
			return err
		}
		created = true
	}
	c.RequestCtx().SetUserValue(sessionKey, wsTarget{sess: sess, created: created})
	svc.wsHandler(c)
	return nil
}

type wsTarget struct {
	sess    *Session
	created bool
}

func optionalSize(c fiber.Ctx, name string, limit int) (*int, error) {
	s := c.Query(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > limit {
		return nil, platform.Invalid(name, "must be an integer between 1 and %d", limit)
	}
	return &n, nil
}

// controlMessage is a client's JSON text frame.
type controlMessage struct {
	Type string `json:"type"`
	Cols *int   `json:"cols"`
	Rows *int   `json:"rows"`
}

func (svc *Service) serveWS(w http.ResponseWriter, r *http.Request) {
	target, _ := r.Context().Value(sessionKey).(wsTarget)
	sess := target.sess
	if sess == nil {
		platform.WriteHTTPError(w, platform.Internal("find the session to attach", nil))
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		// gorilla already answered 400 with the reason.
		if target.created {
			go func() { _ = svc.remove(r.Context(), sess.id) }()
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
			cl.text(errorMessage{Type: "error", Message: "resize: " + platform.AsError(err).Message})
		}
	default:
		cl.text(errorMessage{Type: "error", Message: "unknown control message type " + strconv.Quote(m.Type) + " (known: resize)"})
	}
}

func newWSHandler(svc *Service) fiber.Handler {
	return adaptor.HTTPHandler(http.HandlerFunc(svc.serveWS))
}
