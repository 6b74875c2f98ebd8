package eventlog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// MaxPayload bounds a reported event's payload.
const MaxPayload = 16 << 10

// IngestInput is the body of POST /api/v1/events/ingest (an agent) and
// POST /api/v1/admin/events (an admin): one event of a kind the control
// plane does not produce itself (events.Ingestible).
type IngestInput struct {
	EventType string `json:"event_type" required:"true"`
	// ContainerID is the container the event is about (required from
	// agents: their token is scoped to it).
	ContainerID string `json:"container_id,omitempty"`
	ProjectID   string `json:"project_id,omitempty"`
	// ResourceType defaults to the kind's (container, firewall, pool,
	// storage_share); ResourceID to container_id.
	ResourceType string `json:"resource_type,omitempty"`
	ResourceID   string `json:"resource_id,omitempty"`
	RealmID      string `json:"realm_id,omitempty"`
	// UserID (admins only) is the owner who sees the event.
	UserID  string          `json:"user_id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// CreatedAt is when the producer saw it happen (an agent reports what
	// it buffered while the control plane was unreachable); absent = now.
	// At most MaxSkew in the future.
	CreatedAt *time.Time `json:"created_at,omitempty"`
}

// MaxSkew is how far in the future a reported created_at may be.
const MaxSkew = 5 * time.Minute

// Validate checks the kind, the ids and the payload.
func (in *IngestInput) Validate() error {
	want, ok := events.Ingestible[in.EventType]
	if !ok {
		return fault.Invalid("event_type", "must be a container lifecycle, snapshot, firewall, pool or storage kind, got %q", in.EventType)
	}
	in.ResourceType = cmp.Or(in.ResourceType, want)
	if in.ResourceType != want {
		return fault.Invalid("resource_type", "must be %s for %s", want, in.EventType)
	}
	in.ResourceID = cmp.Or(in.ResourceID, in.ContainerID)
	if in.ResourceID == "" {
		return fault.Invalid("resource_id", "is required when container_id is absent")
	}
	for name, v := range map[string]string{"container_id": in.ContainerID, "project_id": in.ProjectID,
		"resource_id": in.ResourceID, "realm_id": in.RealmID, "user_id": in.UserID} {
		if why := events.CheckValue(v); why != "" {
			return fault.Invalid(name, "%s", why)
		}
	}
	if len(in.Payload) > MaxPayload {
		return fault.Invalid("payload", "must be at most %d bytes", MaxPayload)
	}
	if p := bytes.TrimSpace(in.Payload); len(p) > 0 && p[0] != '{' && !bytes.Equal(p, []byte("null")) {
		return fault.Invalid("payload", "must be an object")
	}
	return nil
}

// Ingest records an event an agent reports. The rule: the credential is
// an svc_ auth token, container_id is given, and the token's owner is
// admitted to that container by the "container.access" check of the
// domain that owns containers (admins always are). Without such a domain
// only admins' tokens may report.
func (s *Service) Ingest(ctx context.Context, in IngestInput) (*events.Event, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.Kind != auth.KindToken {
		return nil, fault.Errorf(fault.CodeForbidden, "ingest takes an agent's svc_ auth token, not a session")
	}
	if in.ContainerID == "" {
		return nil, fault.Invalid("container_id", "is required: an agent reports events of its own container")
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.UserID != "" && !p.IsAdmin() {
		return nil, fault.Invalid("user_id", "only admins name the owner; an agent's events belong to its token's owner")
	}
	if !p.IsAdmin() {
		check := s.env.Authz.Lookup(CheckContainerAccess)
		if check == nil {
			return nil, fault.Errorf(fault.CodeForbidden, "access to container %q cannot be confirmed", in.ContainerID)
		}
		if err := check(ctx, params(map[string]string{"container": in.ContainerID, "project": in.ProjectID})); err != nil {
			return nil, err
		}
		if member := s.env.Authz.Lookup(CheckProjectMember); in.ProjectID != "" && member != nil {
			if err := member(ctx, params(map[string]string{"project": in.ProjectID})); err != nil {
				return nil, err
			}
		}
	}
	return s.record(ctx, p, in)
}

// Report records an event an admin reports on a producer's behalf.
func (s *Service) Report(ctx context.Context, in IngestInput) (*events.Event, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return s.record(ctx, p, in)
}

func (s *Service) record(ctx context.Context, p *auth.Principal, in IngestInput) (*events.Event, error) {
	var payload json.RawMessage
	if p := bytes.TrimSpace(in.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		payload = p
	}
	var at time.Time
	if in.CreatedAt != nil {
		if in.CreatedAt.After(s.env.Clock.Now().Add(MaxSkew)) {
			return nil, fault.Invalid("created_at", "must not be more than %s in the future", MaxSkew)
		}
		if in.CreatedAt.Year() < 2000 {
			return nil, fault.Invalid("created_at", "must be in the year 2000 or later")
		}
		at = in.CreatedAt.UTC()
	}
	rec := events.Event{EventType: in.EventType, ResourceType: in.ResourceType, ResourceID: in.ResourceID, ProjectID: in.ProjectID,
		ContainerID: in.ContainerID, RealmID: in.RealmID, UserID: in.UserID, ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: payload, CreatedAt: at}
	return domain.Transact(ctx, s.env.Store.UpdateContext, "record the event", func(tx *store.Tx) (*events.Event, error) {
		ev, err := s.env.Events.Append(tx, rec)
		return &ev, err
	})
}
