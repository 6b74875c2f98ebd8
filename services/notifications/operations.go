package notifications

import (
	"context"
	"strconv"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
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
		return fault.Invalid("ids", "required: the notifications to dismiss, or all true")
	}
	if len(r.IDs) > 0 && r.All {
		return fault.Invalid("all", "give ids or all, not both")
	}
	if len(r.IDs) > 1000 {
		return fault.Invalid("ids", "at most 1000")
	}
	for i, id := range r.IDs {
		if len(id) < 2 || id[0] != 'n' {
			return fault.Invalid("ids["+strconv.Itoa(i)+"]", "must be a notification id such as n12, got %q", id)
		}
		if _, err := strconv.ParseUint(id[1:], 10, 64); err != nil {
			return fault.Invalid("ids["+strconv.Itoa(i)+"]", "must be a notification id such as n12, got %q", id)
		}
	}
	if r.Display != "" {
		d, err := normalizeDisplay(r.Display)
		if err != nil {
			return fault.Invalid("display", "must be :N or agent, got %q", r.Display)
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

// DisplayRef names a display.
type DisplayRef struct {
	Display string `path:"display" doc:":N (a bare N is :N) or agent"`
}

// DisplayFilter is the query of DELETE /api/v1/notifications/dismiss.
type DisplayFilter struct {
	Display string `query:"display" doc:"only this display's (:N or agent)"`
}

// IngestInput is an agent event posted by the agent's relay.
type IngestInput struct {
	Peer         platform.Peer
	ForwardedFor string `header:"X-Forwarded-For" doc:"set by the gateway: such a request is refused (404)"`
	Key          string `header:"X-Deckhand-Ingest-Key" doc:"the key in <data>/notifications/ingest.key"`
	Body         contract.Event
}

// StreamQuery is the query of GET /api/v1/notifications/stream.
type StreamQuery struct {
	Since   uint64 `query:"since" maximum:"1e15" default:"0" doc:"the last seq the client saw"`
	Display string `query:"display" doc:"only this display's notifications (:N or agent)"`
}

// Dismiss dismisses the notifications a request names: by id, all or
// none (404 names the first unknown one), or with all every open one.
func (s *Service) Dismiss(_ context.Context, req DismissRequest) (Dismissed, error) {
	if req.All {
		return s.dismissAll(req.Display), nil
	}
	return s.dismiss(req.IDs)
}

// Clear dismisses every open notification, of f.Display when given.
func (s *Service) Clear(_ context.Context, f DisplayFilter) (Dismissed, error) {
	d := f.Display
	if d != "" {
		var err error
		if d, err = normalizeDisplay(d); err != nil {
			return Dismissed{}, fault.Invalid("display", "must be :N or agent, got %q", f.Display)
		}
	}
	return s.dismissAll(d), nil
}

// Open answers a display's open notifications, oldest first.
func (s *Service) Open(_ context.Context, ref DisplayRef) (DisplayList, error) {
	d, err := normalizeDisplay(ref.Display)
	if err != nil {
		return DisplayList{}, fault.Invalid("display", "must be :N or agent, got %q", ref.Display)
	}
	return DisplayList{Display: d, Seq: s.hub.newest(), Notifications: s.hub.open(d)}, nil
}

// Ingest takes an agent event from the agent's relay on this machine.
func (s *Service) Ingest(_ context.Context, in IngestInput) error {
	if err := s.checkIngest(in.Peer.RemoteIP, in.Peer.LocalIP, in.ForwardedFor, in.Key); err != nil {
		return err
	}
	if in.Body.Kind == "" {
		return fault.Invalid("kind", "required")
	}
	s.Notify(in.Body)
	return nil
}

// dismiss dismisses notifications by id: all or none (404 names the first
// unknown one).
func (s *Service) dismiss(ids []string) (Dismissed, error) {
	for _, id := range ids {
		if _, ok := s.hub.get(id); !ok {
			return Dismissed{}, fault.NotFound("notification", id)
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

// dismissAll dismisses every open notification, of display when given.
func (s *Service) dismissAll(display string) Dismissed {
	var ids []string
	for _, n := range s.hub.open(display) {
		ids = append(ids, n.ID)
	}
	out, _ := s.dismiss(ids)
	return out
}
