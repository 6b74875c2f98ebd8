package notifications

import (
	"net"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// DisplayList is the answer of GET /api/v1/notifications/{display}.
type DisplayList struct {
	Display       string         `json:"display" required:"true"`
	Seq           uint64         `json:"seq" required:"true" doc:"the newest stream message: resume the stream from here"`
	Notifications []Notification `json:"notifications" required:"true"`
}

// DismissRequest is the body of POST /api/v1/notifications/dismiss.
type DismissRequest struct {
	IDs     []string `json:"ids" doc:"notifications to dismiss"`
	Display string   `json:"display" doc:"with all: only this display's"`
	All     bool     `json:"all" doc:"dismiss every open notification (of display, when given)"`
}

// Validate checks that the request names what to dismiss.
func (r *DismissRequest) Validate() error {
	if len(r.IDs) == 0 && !r.All {
		return platform.Invalid("ids", "required: the notifications to dismiss, or all true")
	}
	if len(r.IDs) > 0 && r.All {
		return platform.Invalid("all", "give ids or all, not both")
	}
	if len(r.IDs) > 1000 {
		return platform.Invalid("ids", "at most 1000")
	}
	for i, id := range r.IDs {
		if len(id) < 2 || id[0] != 'n' {
			return platform.Invalid("ids["+strconv.Itoa(i)+"]", "must be a notification id such as n12, got %q", id)
		}
		if _, err := strconv.ParseUint(id[1:], 10, 64); err != nil {
			return platform.Invalid("ids["+strconv.Itoa(i)+"]", "must be a notification id such as n12, got %q", id)
		}
	}
	if r.Display != "" {
		d, err := normalizeDisplay(r.Display)
		if err != nil {
			return platform.Invalid("display", "must be :N or agent, got %q", r.Display)
		}
		r.Display = d
	}
	return nil
}

// Dismissed is the answer of the dismiss routes.
type Dismissed struct {
	Dismissed []Notification `json:"dismissed" required:"true"`
	Seq       uint64         `json:"seq" required:"true"`
}

// Routes is the service's route table. The fixed paths come before
// {display}, which Fiber matches in order.
func (s *Service) Routes() []platform.Route {
	tags := []string{"notifications"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/notifications/stream", Tags: tags, WebSocket: true,
			Summary: "Stream notifications (WebSocket), resuming from a sequence number",
			Description: "Upgrades to a WebSocket of JSON text frames: hello {type, seq, oldest}, then every kept message with " +
				"seq > since, then live messages {type notification|dismissed, seq, time, notification}. A gap frame " +
				"{type gap, from, to} names messages that are no longer kept. display limits messages to one display. " +
				"Reconnect with since=<last seq seen>. A client 256 messages behind is closed with 4000 and resumes. " +
				"The client may send {\"type\":\"dismiss\",\"ids\":[...]}. A request that is not a WebSocket upgrade is 400.",
			Query: []platform.Param{
				{Name: "since", Type: "integer", Range: &platform.Range{Min: 0, Max: 1e15}, Default: "0", Description: "the last seq the client saw"},
				{Name: "display", Description: "only this display's notifications (:N or agent)"},
			},
			HTTP: http.HandlerFunc(s.serveStream)},
		{Method: http.MethodPost, Path: "/api/v1/notifications/dismiss", Tags: tags, Summary: "Dismiss notifications",
			Description: "Dismisses the notifications named by ids, or with all true every open one (of display, when given). " +
				"Each becomes a dismissed stream message; a desktop notification's program gets NotificationClosed (reason 2). " +
				"Unknown ids are 404 and nothing is dismissed; ids already dismissed are skipped.",
			Body: DismissRequest{}, Response: Dismissed{}, Handler: s.handleDismiss},
		{Method: http.MethodDelete, Path: "/api/v1/notifications/dismiss", Tags: tags, Summary: "Dismiss every open notification",
			Description: "Clears all open notifications, or those of display. Answers what was dismissed.",
			Query:       []platform.Param{{Name: "display", Description: "only this display's (:N or agent)"}},
			Response:    Dismissed{}, Handler: s.handleClear},
		{Method: http.MethodPost, Path: IngestPath, Tags: []string{"internal"}, Summary: "Agent events from the agent's relay",
			Description: "Loopback only, never through the gateway, with the key from <data>/notifications/ingest.key in " +
				IngestKeyHeader + ": how the agent's notifier reaches this service when it runs as its own process. " +
				"Body: an agent event {time, kind, source, level, title, body, data}. 202; 404 through the gateway; 403 from " +
				"another machine; 401 wrong or missing key.",
			Body: platform.Event{}, Status: http.StatusAccepted, Handler: s.handleIngest},
		{Method: http.MethodGet, Path: "/api/v1/notifications/{display}", Tags: tags, Summary: "Open notifications of a display",
			Description: "The open (not dismissed, not expired) notifications of display :N (a bare N is :N; write : as %3A if " +
				"a client insists) or of agent, oldest first, with the stream's newest seq. 400 for a display that is neither.",
			Response: DisplayList{}, Handler: s.handleDisplay},
	}
}

func (s *Service) handleDisplay(c fiber.Ctx) error {
	raw := c.Params("display")
	d, err := normalizeDisplay(raw)
	if err != nil {
		return platform.Invalid("display", "must be :N or agent, got %q", raw)
	}
	return platform.JSON(c, http.StatusOK, DisplayList{Display: d, Seq: s.hub.newest(), Notifications: s.hub.open(d)})
}

func (s *Service) handleDismiss(c fiber.Ctx) error {
	var req DismissRequest
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	if req.All {
		return platform.JSON(c, http.StatusOK, s.DismissAll(req.Display))
	}
	out, err := s.Dismiss(req.IDs)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, out)
}

func (s *Service) handleClear(c fiber.Ctx) error {
	d := platform.QueryOf(c).String("display")
	if d != "" {
		var err error
		if d, err = normalizeDisplay(d); err != nil {
			return platform.Invalid("display", "must be :N or agent, got %q", platform.QueryOf(c).String("display"))
		}
	}
	return platform.JSON(c, http.StatusOK, s.DismissAll(d))
}

func (s *Service) handleIngest(c fiber.Ctx) error {
	if err := s.checkIngest(net.ParseIP(c.IP()), c.RequestCtx().LocalIP(), c.Get("X-Forwarded-For"), c.Get(IngestKeyHeader)); err != nil {
		return err
	}
	var e platform.Event
	if err := platform.Decode(c, &e); err != nil {
		return err
	}
	if e.Kind == "" {
		return platform.Invalid("kind", "required")
	}
	s.Notify(e)
	return c.SendStatus(http.StatusAccepted)
}

// Dismiss dismisses notifications by id: all or none (404 names the first
// unknown one).
func (s *Service) Dismiss(ids []string) (Dismissed, error) {
	for _, id := range ids {
		if _, ok := s.hub.get(id); !ok {
			return Dismissed{}, platform.NotFound("notification", id)
		}
	}
	out := Dismissed{Dismissed: []Notification{}}
	for _, id := range ids {
		if n, ok := s.hub.dismiss(id, ReasonDismissed); ok {
			out.Dismissed = append(out.Dismissed, n)
			if s.bus != nil && n.DBusID != 0 {
				s.bus.closed(n.DBusID, closeDismissed)
			}
		}
	}
	out.Seq = s.hub.newest()
	return out, nil
}

// DismissAll dismisses every open notification, of display when given.
func (s *Service) DismissAll(display string) Dismissed {
	var ids []string
	for _, n := range s.hub.open(display) {
		ids = append(ids, n.ID)
	}
	out, _ := s.Dismiss(ids)
	return out
}
