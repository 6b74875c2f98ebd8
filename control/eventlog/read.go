package eventlog

import (
	"context"
	"slices"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// MaxLimit is the largest event page (docs/spec/interface.md Limits).
const MaxLimit = 500

// ListInput is the query of GET /api/v1/events.
type ListInput struct {
	Limit     int    `query:"limit" minimum:"1" maximum:"500" default:"100" doc:"page size, 1 to 500"`
	Offset    int    `query:"offset" minimum:"0" maximum:"2147483648" default:"0"`
	SortBy    string `query:"sort_by" enum:"created_at,event_type" default:"created_at" doc:"event_type orders by kind, then by time"`
	SortOrder string `query:"sort_order" enum:"asc,desc" default:"desc"`
	FilterInput
}

// FilterInput holds the list filters as given (dates unparsed).
type FilterInput struct {
	EventType    string `query:"event_type" doc:"one kind (docs/spec/interface.md Events)"`
	ResourceType string `query:"resource_type" doc:"one resource type"`
	ResourceID   string `query:"resource_id" doc:"one resource id"`
	ProjectID    string `query:"project_id" doc:"one project"`
	ContainerID  string `query:"container_id" doc:"one container"`
	RealmID      string `query:"realm_id" doc:"one realm"`
	DateRange
}

// DateRange bounds a list or stats by creation time.
type DateRange struct {
	StartDate string `query:"start_date" doc:"ISO 8601 date or timestamp; events created at or after it (a plain date: from 00:00 UTC)"`
	EndDate   string `query:"end_date" doc:"ISO 8601 date or timestamp; events created at or before it (a plain date: the whole day)"`
}

// EventRef names one event.
type EventRef struct {
	ID string `path:"id" doc:"an event id"`
}

// Validate checks the paging, order and filters.
func (in *ListInput) Validate() error {
	switch {
	case in.Limit < 1 || in.Limit > MaxLimit:
		return fault.Invalid("limit", "must be an integer from 1 to %d", MaxLimit)
	case in.Offset < 0:
		return fault.Invalid("offset", "must be 0 or more")
	case !slices.Contains([]string{"", "created_at", "event_type"}, in.SortBy):
		return fault.Invalid("sort_by", "must be created_at or event_type, got %q", in.SortBy)
	case !slices.Contains([]string{"", "asc", "desc"}, in.SortOrder):
		return fault.Invalid("sort_order", "must be asc or desc, got %q", in.SortOrder)
	}
	_, err := in.FilterInput.parse()
	return err
}

// parseDate reads an ISO 8601 timestamp or a plain date. A plain date
// starts at 00:00 UTC; as an end bound (end) it covers the whole day.
func parseDate(field, v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		if end {
			return t.Add(24*time.Hour - time.Nanosecond), nil
		}
		return t, nil
	}
	return time.Time{}, fault.Invalid(field, "must be an ISO 8601 date (2026-01-02) or timestamp (2026-01-02T15:04:05Z), got %q", v)
}

func (f FilterInput) parse() (events.Filter, error) {
	out := events.Filter{EventType: f.EventType, ResourceType: f.ResourceType, ResourceID: f.ResourceID,
		ProjectID: f.ProjectID, ContainerID: f.ContainerID, RealmID: f.RealmID}
	for name, v := range map[string]string{"event_type": f.EventType, "resource_type": f.ResourceType,
		"resource_id": f.ResourceID, "project_id": f.ProjectID, "container_id": f.ContainerID, "realm_id": f.RealmID} {
		if why := events.CheckValue(v); why != "" {
			return out, fault.Invalid(name, "%s", why)
		}
	}
	var err error
	if out.Start, err = parseDate("start_date", f.StartDate, false); err != nil {
		return out, err
	}
	if out.End, err = parseDate("end_date", f.EndDate, true); err != nil {
		return out, err
	}
	if !out.Start.IsZero() && !out.End.IsZero() && out.End.Before(out.Start) {
		return out, fault.Invalid("end_date", "must not be before start_date")
	}
	return out, nil
}

// EventList is the data of GET /api/v1/events.
type EventList struct {
	Events     []events.Event    `json:"events"`
	Pagination domain.Pagination `json:"pagination"`
}

// List answers the events the caller may see that pass the filters.
func (s *Service) List(ctx context.Context, in ListInput) (*EventList, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	f, _ := in.FilterInput.parse()
	o := events.Sort{ByType: in.SortBy == "event_type", Desc: in.SortOrder != "asc"}
	v := s.viewer(ctx, p)
	return domain.Transact(ctx, s.env.Store.ViewContext, "list events", func(tx *store.Tx) (*EventList, error) {
		page, err := events.Find(tx, f, v, o, in.Offset, in.Limit)
		return &EventList{Events: page.Events, Pagination: domain.Paginate(page.Total, in.Offset/in.Limit+1, in.Limit)}, err
	})
}

// Get answers one event the caller may see (404 otherwise, so ids of
// other users' events are not confirmed).
func (s *Service) Get(ctx context.Context, ref EventRef) (*events.Event, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ev, err := domain.Transact(ctx, s.env.Store.ViewContext, "read the event", func(tx *store.Tx) (*events.Event, error) {
		return events.Get(tx, ref.ID)
	})
	if err == nil && (ev == nil || !s.viewer(ctx, p).Sees(ev)) {
		return nil, fault.NotFound("event", ref.ID)
	}
	return ev, err
}

// StatsInput is the query of GET /api/v1/events/stats.
type StatsInput struct {
	DateRange
	RealmID string `query:"realm_id" doc:"one realm"`
}

// StatsResult is the data of GET /api/v1/events/stats: counts of the
// events the caller may see in the range, by kind and by resource type.
type StatsResult struct {
	events.Stats
	StartDate *time.Time `json:"start_date"`
	EndDate   *time.Time `json:"end_date"`
}

// Stats aggregates the caller's visible events by event type and
// resource type; total equals the list's pagination.total for the same
// dates and realm.
func (s *Service) Stats(ctx context.Context, in StatsInput) (*StatsResult, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	f, err := FilterInput{DateRange: in.DateRange, RealmID: in.RealmID}.parse()
	if err != nil {
		return nil, err
	}
	v := s.viewer(ctx, p)
	st, err := domain.Transact(ctx, s.env.Store.ViewContext, "count events", func(tx *store.Tx) (events.Stats, error) {
		return events.Count(tx, f, v)
	})
	if err != nil {
		return nil, err
	}
	out := &StatsResult{Stats: st}
	if !f.Start.IsZero() {
		out.StartDate = &f.Start
	}
	if !f.End.IsZero() {
		out.EndDate = &f.End
	}
	return out, nil
}
