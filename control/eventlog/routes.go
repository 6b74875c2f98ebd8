package eventlog

import (
	"net/http"
	"strconv"
	"time"

	"deckhand/control/events"
	"deckhand/platform"

	"github.com/gofiber/fiber/v3"
)

var filterParams = []platform.Param{
	{Name: "event_type", Description: "one kind (interface.md Events)"},
	{Name: "resource_type", Description: "one resource type"},
	{Name: "resource_id", Description: "one resource id"},
	{Name: "project_id", Description: "one project"},
	{Name: "container_id", Description: "one container"},
	{Name: "realm_id", Description: "one realm"},
}

var dateParams = []platform.Param{
	{Name: "start_date", Description: "ISO 8601 date or timestamp; events created at or after it (a plain date: from 00:00 UTC)"},
	{Name: "end_date", Description: "ISO 8601 date or timestamp; events created at or before it (a plain date: the whole day)"},
}

// Routes is the domain's route table. Static paths come before {id}.
func (s *Service) Routes() []platform.Route {
	listQuery := append([]platform.Param{
		{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: MaxLimit}, Default: strconv.Itoa(DefaultLimit),
			Description: "page size, 1 to 500"},
		{Name: "offset", Type: "integer", Range: &platform.Range{Min: 0, Max: 1 << 31}, Default: "0"},
		{Name: "sort_by", Enum: []string{"created_at", "event_type"}, Default: "created_at",
			Description: "event_type orders by kind, then by time"},
		{Name: "sort_order", Enum: []string{"asc", "desc"}, Default: "desc"},
	}, append(append([]platform.Param(nil), filterParams...), dateParams...)...)
	statsQuery := append(append([]platform.Param(nil), dateParams...), platform.Param{Name: "realm_id", Description: "one realm"})
	rl := func(name string, n int) []platform.RateLimit {
		return []platform.RateLimit{{Name: name, By: platform.ByAccount, N: n, Per: time.Minute}}
	}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/events", Summary: "List events", Tags: []string{"events"},
			Description: "Events the caller may see, newest first by default: admins see all; a user the events they own " +
				"or caused and those of projects they are a member of. Every filter is served from an index. " +
				"data: {events[], pagination{total,page,limit,totalPages}}.",
			Policy: platform.SignedIn, Query: listQuery, Response: EventList{}, Handler: s.handleList},
		{Method: http.MethodGet, Path: "/api/v1/events/stats", Summary: "Count events by kind and resource type",
			Tags: []string{"events"}, Description: "Over the caller's visible events in the date range; total equals the list's pagination.total for the same filters.",
			Policy: platform.SignedIn, Query: statsQuery, Response: StatsResult{}, Handler: s.handleStats},
		{Method: http.MethodPost, Path: "/api/v1/events/cleanup", Summary: "Delete events older than retention_days",
			Tags: []string{"events"}, Description: "Admins only. retention_days 1 to 365. data: {deleted}, the exact count.",
			Policy: platform.Admin, Body: CleanupInput{}, Response: Deleted{},
			Handler: platform.Endpoint(http.StatusOK, "Old events deleted", s.Cleanup)},
		{Method: http.MethodPost, Path: "/api/v1/events/ingest", Summary: "Report an event from an agent",
			Tags: []string{"events"}, Limits: rl("events.ingest", 600),
			Description: "An agent's svc_ auth token reports a container lifecycle, snapshot, firewall, pool or storage event " +
				"of its container: container_id is required and the token's owner must pass the containers domain's " +
				"container.access check (admins' tokens always do). Sessions get 403.",
			Policy: platform.SignedIn, Body: IngestInput{}, Response: events.Event{}, Status: http.StatusCreated,
			Handler: platform.Endpoint(http.StatusCreated, "Event recorded", s.Ingest)},
		{Method: http.MethodPost, Path: "/api/v1/admin/events", Summary: "Report an event (admin)",
			Tags: []string{"events", "admin"}, Description: "The ingestible kinds, reported by an admin on a producer's behalf; user_id names the owner who sees it.",
			Policy: platform.Admin, Body: IngestInput{}, Response: events.Event{}, Status: http.StatusCreated,
			Handler: platform.Endpoint(http.StatusCreated, "Event recorded", s.Report)},
		{Method: http.MethodDelete, Path: "/api/v1/events", Summary: "Delete events by filter",
			Tags: []string{"events"}, Description: "Admins only (the log is an audit record). At least one of event_type, " +
				"resource_type, resource_id, before_date (strictly earlier), realm_id, or all=true; other fields are 400. data: {deleted}.",
			Policy: platform.Admin, Body: DeleteInput{}, Response: Deleted{},
			Handler: platform.Endpoint(http.StatusOK, "Events deleted", s.DeleteMatching)},
		{Method: http.MethodGet, Path: "/api/v1/events/{id}", Summary: "One event", Tags: []string{"events"},
			Description: "404 for an event the caller may not see.", Policy: platform.SignedIn, Response: events.Event{},
			Handler: func(c fiber.Ctx) error {
				ev, err := s.Get(c.Context(), c.Params("id"))
				if err != nil {
					return err
				}
				return platform.Respond(c, http.StatusOK, "Event", ev)
			}},
		{Method: http.MethodDelete, Path: "/api/v1/events/{id}", Summary: "Delete one event", Tags: []string{"events"},
			Description: "Admins only.", Policy: platform.Admin, Response: Deleted{},
			Handler: func(c fiber.Ctx) error {
				d, err := s.DeleteOne(c.Context(), c.Params("id"))
				if err != nil {
					return err
				}
				return platform.Respond(c, http.StatusOK, "Event deleted", d)
			}},
	}
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	in := ListInput{Limit: int(q.Int("limit")), Offset: int(q.Int("offset")), SortBy: q.String("sort_by"),
		SortOrder: q.String("sort_order"), Filter: FilterInput{EventType: q.String("event_type"),
			ResourceType: q.String("resource_type"), ResourceID: q.String("resource_id"), ProjectID: q.String("project_id"),
			ContainerID: q.String("container_id"), RealmID: q.String("realm_id"),
			StartDate: q.String("start_date"), EndDate: q.String("end_date")}}
	out, err := s.List(c.Context(), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Events", out)
}

func (s *Service) handleStats(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	out, err := s.Stats(c.Context(), StatsInput{StartDate: q.String("start_date"), EndDate: q.String("end_date"),
		RealmID: q.String("realm_id")})
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Event statistics", out)
}
