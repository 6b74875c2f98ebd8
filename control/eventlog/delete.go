package eventlog

import (
	"context"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// CleanupInput is the body of POST /api/v1/events/cleanup.
type CleanupInput struct {
	RetentionDays *int `json:"retention_days" required:"true" minimum:"1" maximum:"365"`
}

// Validate requires retention_days in 1..365.
func (in *CleanupInput) Validate() error {
	if in.RetentionDays == nil {
		return fault.Invalid("retention_days", "is required (an integer from 1 to 365)")
	}
	if *in.RetentionDays < 1 || *in.RetentionDays > 365 {
		return fault.Invalid("retention_days", "must be an integer from 1 to 365, got %d", *in.RetentionDays)
	}
	return nil
}

// Deleted is the data of the deleting endpoints.
type Deleted struct {
	Deleted int `json:"deleted"`
}

// Cleanup deletes every event older than retention_days (admins only).
func (s *Service) Cleanup(ctx context.Context, in CleanupInput) (*Deleted, error) {
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	n, err := s.env.Events.Expire(ctx, *in.RetentionDays)
	if err != nil {
		return nil, fault.Wrap("delete old events", err)
	}
	return &Deleted{Deleted: n}, nil
}

// DeleteInput is the body of DELETE /api/v1/events: at least one filter,
// or all=true; unknown fields are refused.
type DeleteInput struct {
	EventType    string `json:"event_type,omitempty"`
	ResourceType string `json:"resource_type,omitempty"`
	ResourceID   string `json:"resource_id,omitempty"`
	BeforeDate   string `json:"before_date,omitempty"`
	RealmID      string `json:"realm_id,omitempty"`
	All          bool   `json:"all,omitempty"`
}

// Validate requires a filter or all=true and well-formed values.
func (in *DeleteInput) Validate() error {
	_, err := in.filter()
	return err
}

func (in *DeleteInput) filter() (events.Filter, error) {
	f, err := FilterInput{EventType: in.EventType, ResourceType: in.ResourceType, ResourceID: in.ResourceID, RealmID: in.RealmID}.parse()
	if err != nil {
		return f, err
	}
	if in.BeforeDate != "" {
		t, err := parseDate("before_date", in.BeforeDate, false)
		if err != nil {
			return f, err
		}
		f.End = t.Add(-1) // before: strictly earlier
	}
	if !in.All && in.EventType == "" && in.ResourceType == "" && in.ResourceID == "" && in.BeforeDate == "" && in.RealmID == "" {
		return f, fault.Invalid("body", "give at least one filter (event_type, resource_type, resource_id, before_date, realm_id) or all=true")
	}
	return f, nil
}

// DeleteMatching deletes the events the filters select (admins only).
func (s *Service) DeleteMatching(ctx context.Context, in DeleteInput) (*Deleted, error) {
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	f, err := in.filter()
	if err != nil {
		return nil, err
	}
	n, err := s.env.Events.DeleteMatching(ctx, f)
	if err != nil {
		return nil, fault.Wrap("delete events", err)
	}
	return &Deleted{Deleted: n}, nil
}

// DeleteOne deletes one event (admins only).
func (s *Service) DeleteOne(ctx context.Context, ref EventRef) (*Deleted, error) {
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	ok, err := domain.Transact(ctx, s.env.Store.UpdateContext, "delete the event", func(tx *store.Tx) (bool, error) {
		return events.Delete(tx, ref.ID)
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFound("event", ref.ID)
	}
	return &Deleted{Deleted: 1}, nil
}
