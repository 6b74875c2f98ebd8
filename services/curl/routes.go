package curl

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"sessions"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/curl/sessions", OperationID: "listSessions", Tags: tags, Summary: "List cookie sessions",
			Description: "Every jar in <data>/curl/jars with its cookie count, domains, size and time; never a value.",
			Op:          platform.ReadOp(s.Sessions)},
		{Method: http.MethodGet, Path: "/api/v1/curl/sessions/{id}", OperationID: "getSession", Tags: tags, Summary: "A cookie session",
			Description: "The jar's path (for curl -b/-c), cookie count, domains, size and time. 404 unknown session; 409 when " +
				"the file is not a Netscape cookie file (the line number is named).",
			Op: platform.Op(s.Session)},
		{Method: http.MethodDelete, Path: "/api/v1/curl/sessions/{id}", OperationID: "deleteSession", Tags: tags, Summary: "Delete a cookie session",
			Description: "Removes the jar file. 204; 404 unknown session.", Status: http.StatusNoContent,
			Op: platform.CommandOp(s.Delete)},
		{Method: http.MethodGet, Path: "/api/v1/curl/sessions/{id}/cookies", OperationID: "listCookies", Tags: tags, Summary: "Cookies of a session",
			Description: "Each cookie's domain, path, name, expiry, secure and http_only; value is \"********\" (masked true) " +
				"unless reveal=true.",
			Op: platform.Op(s.Cookies)},
		{Method: http.MethodPost, Path: "/api/v1/curl/sessions/{id}/cookies", OperationID: "addCookies", Tags: tags, Summary: "Add cookies to a session",
			Description: "Adds or replaces (same domain, path and name) cookies, creating the jar when missing: 201 for a new " +
				"session, 200 otherwise, with the session (never values). curl -b PATH sends them.",
			Statuses: []int{http.StatusCreated}, Op: platform.Op(s.AddCookies)},
	}
}
