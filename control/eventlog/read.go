package eventlog

import (
	"context"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/store"
)

// Event page size (interface.md Limits).
const (
	MaxLimit     = 500
	DefaultLimit = 100
)

// ListInput is the query of GET /api/v1/events.
type ListInput struct {
	Limit     int
	Offset    int
	SortBy    string // created_at (default) or event_type
	SortOrder string // desc (default) or asc
	Filter    FilterInput
}

// FilterInput holds the list and stats filters as given (dates unparsed).
type FilterInput struct {
	EventType, ResourceType, ResourceID, ProjectID, ContainerID, RealmID string
	StartDate, EndDate                                                   string
}

// Validate checks the paging, order and filters.
func (in *ListInput) Validate() error {
	if in.Limit < 1 || in.Limit > MaxLimit {
		return platform.Invalid("limit", "must be an integer from 1 to %d", MaxLimit)
	}
	if in.Offset < 0 {
		return platform.Invalid("offset", "must be 0 or more")
	}
	switch in.SortBy {
	case "", "created_at", "event_type":
	default:
		return platform.Invalid("sort_by", "must be created_at or event_type, got %q", in.SortBy)
	}
	switch in.SortOrder {
	case "", "asc", "desc":
	default:
		return platform.Invalid("sort_order", "must be asc or desc, got %q", in.SortOrder)
	}
	_, err := in.Filter.parse()
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
	return time.Time{}, platform.Invalid(field, "must be an ISO 8601 date (2026-01-02) or timestamp (2026-01-02T15:04:05Z), got %q", v)
}

func (f FilterInput) parse() (events.Filter, error) {
	out := events.Filter{EventType: f.EventType, ResourceType: f.ResourceType, ResourceID: f.ResourceID,
		ProjectID: f.ProjectID, ContainerID: f.ContainerID, RealmID: f.RealmID}
	for name, v := range map[string]string{"event_type": f.EventType, "resource_type": f.ResourceType,
		"resource_id": f.ResourceID, "project_id": f.ProjectID, "container_id": f.ContainerID, "realm_id": f.RealmID} {
		if why := events.CheckValue(v); why != "" {
			return out, platform.Invalid(name, "%s", why)
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
		return out, platform.Invalid("end_date", "must not be before start_date")
	}
	return out, nil
}

// Pagination is data.pagination of interface.md.
type Pagination = domain.Pagination

// EventList is the data of GET /api/v1/events.
type EventList struct {
	Events     []events.Event `json:"events"`
	Pagination Pagination     `json:"pagination"`
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
	f, _ := in.Filter.parse()
	o := events.Sort{ByType: in.SortBy == "event_type", Desc: in.SortOrder != "asc"}
	v := s.viewer(ctx, p)
	var page events.Page
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		page, err = events.Find(tx, f, v, o, in.Offset, in.Limit)
		return err
	})
	if err != nil {
		return nil, platform.Wrap("list events", err)
	}
	return &EventList{Events: page.Events, Pagination: domain.Paginate(page.Total, in.Offset/in.Limit+1, in.Limit)}, nil
}

// Get answers one event the caller may see (404 otherwise, so ids of
// other users' events are not confirmed).
func (s *Service) Get(ctx context.Context, id string) (*events.Event, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var ev *events.Event
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		ev, err = events.Get(tx, id)
		return err
	})
	if err != nil {
		return nil, platform.Wrap("read the event", err)
	}
	if ev == nil || !s.viewer(ctx, p).Sees(ev) {
		return nil, platform.NotFound("event", id)
	}
	return ev, nil
}

// StatsInput is the query of GET /api/v1/events/stats.
type StatsInput struct {
	StartDate, EndDate, RealmID string
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
	f, err := FilterInput{StartDate: in.StartDate, EndDate: in.EndDate, RealmID: in.RealmID}.parse()
	if err != nil {
		return nil, err
	}
	v := s.viewer(ctx, p)
	var st events.Stats
	err = s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		st, err = events.Count(tx, f, v)
		return err
	})
	if err != nil {
		return nil, platform.Wrap("count events", err)
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
