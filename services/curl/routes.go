package curl

import (
	"net/http"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"sessions"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/curl/sessions", Tags: tags, Summary: "List cookie sessions",
			Description: "Every jar in <data>/curl/jars with its cookie count, domains, size and time; never a value.",
			Response:    SessionList{}, Handler: func(c fiber.Ctx) error {
				l, err := s.Sessions()
				if err != nil {
					return err
				}
				return platform.JSON(c, http.StatusOK, l)
			}},
		{Method: http.MethodGet, Path: "/api/v1/curl/sessions/{id}", Tags: tags, Summary: "A cookie session",
			Description: "The jar's path (for curl -b/-c), cookie count, domains, size and time. 404 unknown session; 409 when " +
				"the file is not a Netscape cookie file (the line number is named).",
			Response: Session{}, Handler: func(c fiber.Ctx) error {
				v, err := s.Session(c.Params("id"))
				if err != nil {
					return err
				}
				return platform.JSON(c, http.StatusOK, v)
			}},
		{Method: http.MethodDelete, Path: "/api/v1/curl/sessions/{id}", Tags: tags, Summary: "Delete a cookie session",
			Description: "Removes the jar file. 204; 404 unknown session.", Status: http.StatusNoContent,
			Handler: func(c fiber.Ctx) error {
				if err := s.Delete(c.Params("id")); err != nil {
					return err
				}
				return c.SendStatus(http.StatusNoContent)
			}},
		{Method: http.MethodGet, Path: "/api/v1/curl/sessions/{id}/cookies", Tags: tags, Summary: "Cookies of a session",
			Description: "Each cookie's domain, path, name, expiry, secure and http_only; value is \"********\" (masked true) " +
				"unless reveal=true.",
			Query:    []platform.Param{{Name: "reveal", Type: "boolean", Default: "false", Description: "answer the values"}},
			Response: CookieList{}, Handler: func(c fiber.Ctx) error {
				v, err := s.Cookies(c.Params("id"), platform.QueryOf(c).Bool("reveal"))
				if err != nil {
					return err
				}
				return platform.JSON(c, http.StatusOK, v)
			}},
		{Method: http.MethodPost, Path: "/api/v1/curl/sessions/{id}/cookies", Tags: tags, Summary: "Add cookies to a session",
			Description: "Adds or replaces (same domain, path and name) cookies, creating the jar when missing: 201 for a new " +
				"session, 200 otherwise, with the session (never values). curl -b PATH sends them.",
			Body: AddCookies{}, Response: Session{}, Handler: s.handleAdd},
	}
}

func (s *Service) handleAdd(c fiber.Ctx) error {
	var req AddCookies
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	v, created, err := s.AddCookies(c.Params("id"), req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return platform.JSON(c, status, v)
}
