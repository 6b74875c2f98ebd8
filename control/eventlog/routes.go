package eventlog

import (
	"net/http"
	"time"

	"deckhand/platform"
	"deckhand/platform/ratelimit"
)

// Routes is the domain's route table. Static paths come before {id}.
func (s *Service) Routes() []platform.Route {
	tag := []string{"events"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/events", OperationID: "listEvents", Summary: "List events", Tags: tag,
			Description: "Events the caller may see, newest first by default: admins see all; a user the events they own " +
				"or caused and those of projects they are a member of. Every filter is served from an index. " +
				"data: {events[], pagination{total,page,limit,totalPages}}.",
			Policy: platform.SignedIn, Message: "Events", Op: platform.Op(s.List)},
		{Method: http.MethodGet, Path: "/api/v1/events/stats", OperationID: "getEventStats", Summary: "Count events by kind and resource type",
			Tags: tag, Description: "Over the caller's visible events in the date range; total equals the list's pagination.total for the same filters.",
			Policy: platform.SignedIn, Message: "Event statistics", Op: platform.Op(s.Stats)},
		{Method: http.MethodPost, Path: "/api/v1/events/cleanup", OperationID: "cleanupEvents", Summary: "Delete events older than retention_days",
			Tags: tag, Description: "Admins only. retention_days 1 to 365. data: {deleted}, the exact count.",
			Policy: platform.Admin, Message: "Old events deleted", Op: platform.Op(s.Cleanup)},
		{Method: http.MethodPost, Path: "/api/v1/events/ingest", OperationID: "ingestEvent", Summary: "Report an event from an agent",
			Tags: tag, Limits: []ratelimit.RateLimit{{Name: "events.ingest", By: ratelimit.ByAccount, N: 600, Per: time.Minute}},
			Description: "An agent's svc_ auth token reports a container lifecycle, snapshot, firewall, pool or storage event " +
				"of its container: container_id is required and the token's owner must pass the containers domain's " +
				"container.access check (admins' tokens always do). Sessions get 403.",
			Policy: platform.SignedIn, Status: http.StatusCreated, Message: "Event recorded", Op: platform.Op(s.Ingest)},
		{Method: http.MethodPost, Path: "/api/v1/admin/events", OperationID: "reportEvent", Summary: "Report an event (admin)",
			Tags: []string{"events", "admin"}, Description: "The ingestible kinds, reported by an admin on a producer's behalf; user_id names the owner who sees it.",
			Policy: platform.Admin, Status: http.StatusCreated, Message: "Event recorded", Op: platform.Op(s.Report)},
		{Method: http.MethodDelete, Path: "/api/v1/events", OperationID: "deleteEvents", Summary: "Delete events by filter",
			Tags: tag, Description: "Admins only (the log is an audit record). At least one of event_type, " +
				"resource_type, resource_id, before_date (strictly earlier), realm_id, or all=true; other fields are 400. data: {deleted}.",
			Policy: platform.Admin, Message: "Events deleted", Op: platform.Op(s.DeleteMatching)},
		{Method: http.MethodGet, Path: "/api/v1/events/{id}", OperationID: "getEvent", Summary: "One event", Tags: tag,
			Description: "404 for an event the caller may not see.", Policy: platform.SignedIn, Message: "Event", Op: platform.Op(s.Get)},
		{Method: http.MethodDelete, Path: "/api/v1/events/{id}", OperationID: "deleteEvent", Summary: "Delete one event", Tags: tag,
			Description: "Admins only.", Policy: platform.Admin, Message: "Event deleted", Op: platform.Op(s.DeleteOne)},
	}
}
