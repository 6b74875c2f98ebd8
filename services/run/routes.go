package run

import (
	"net/http"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

var ifMatchParam = platform.Param{Name: "If-Match", In: "header",
	Description: "the version the change is based on; a stale one answers 409 CONFLICT"}

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	pt, st := []string{"profiles"}, []string{"sources"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/run/profiles", Tags: pt, Summary: "List profiles and the active one",
			Response: ProfileList{}, Handler: func(c fiber.Ctx) error { return send(c, http.StatusOK, result(s.Profiles())) }},
		{Method: http.MethodPost, Path: "/api/v1/run/profiles", Tags: pt, Summary: "Create a profile",
			Description: "201 with the profile at version 1. The first profile becomes active. 409 when the name is taken.",
			Body:        CreateProfile{}, Response: Profile{}, Status: http.StatusCreated, Handler: s.handleCreateProfile},
		{Method: http.MethodPatch, Path: "/api/v1/run/profiles/{profile}", Tags: pt, Summary: "Change a profile",
			Description: "Fields given replace the profile's; env is merged (null removes a variable). 404 unknown profile; " +
				"409 when If-Match names another version.",
			Query: []platform.Param{ifMatchParam}, Body: PatchProfile{}, Response: Profile{}, Handler: s.handlePatchProfile},
		{Method: http.MethodDelete, Path: "/api/v1/run/profiles/{profile}", Tags: pt, Summary: "Delete a profile",
			Description: "204; deleting the active profile leaves none active. 404 unknown profile.",
			Status:      http.StatusNoContent, Handler: func(c fiber.Ctx) error {
				if err := s.DeleteProfile(c.Params("profile")); err != nil {
					return err
				}
				return c.SendStatus(http.StatusNoContent)
			}},
		{Method: http.MethodPost, Path: "/api/v1/run/profiles/{profile}/select", Tags: pt, Summary: "Make a profile the active one",
			Response: Profile{}, Handler: func(c fiber.Ctx) error { return send(c, http.StatusOK, result(s.SelectProfile(c.Params("profile")))) }},

		{Method: http.MethodGet, Path: "/api/v1/run/sources", Tags: st, Summary: "List sources with their last sync",
			Response: SourceList{}, Handler: func(c fiber.Ctx) error { return send(c, http.StatusOK, result(s.Sources())) }},
		{Method: http.MethodPost, Path: "/api/v1/run/sources", Tags: st, Summary: "Add a source",
			Description: "201 with the source (state never; POST .../sync to fetch it). 409 when the name is taken or dir overlaps " +
				"another source's.",
			Body: CreateSource{}, Response: Source{}, Status: http.StatusCreated, Handler: s.handleCreateSource},
		{Method: http.MethodPost, Path: "/api/v1/run/sources/sync", Tags: st, Summary: "Sync every source",
			Description: "Syncs the sources one after another and answers each one's result; a failed source does not stop the rest.",
			Response:    SyncAll{}, Handler: func(c fiber.Ctx) error { return send(c, http.StatusOK, result(s.SyncAll(c.Context()))) }},
		{Method: http.MethodPatch, Path: "/api/v1/run/sources/{source_id}", Tags: st, Summary: "Change a source",
			Description: "name, url, ref and dir; the type stays. The next sync uses the new values (a new dir starts fresh; the " +
				"old directory is left). 404 unknown source; 409 stale If-Match or a taken name or dir.",
			Query: []platform.Param{ifMatchParam}, Body: PatchSource{}, Response: Source{}, Handler: s.handlePatchSource},
		{Method: http.MethodDelete, Path: "/api/v1/run/sources/{source_id}", Tags: st, Summary: "Delete a source",
			Description: "204. The synced directory stays unless remove_files=true. 404 unknown source; 409 while it syncs.",
			Query:       []platform.Param{{Name: "remove_files", Type: "boolean", Default: "false", Description: "also delete the synced directory"}},
			Status:      http.StatusNoContent, Handler: func(c fiber.Ctx) error {
				if err := s.DeleteSource(c.Params("source_id"), platform.QueryOf(c).Bool("remove_files")); err != nil {
					return err
				}
				return c.SendStatus(http.StatusNoContent)
			}},
		{Method: http.MethodPost, Path: "/api/v1/run/sources/{source_id}/sync", Tags: st, Summary: "Sync one source now",
			Description: "Answers when the sync ends: 200 with the source; sync.state is ok or error (with last_error). 409 while " +
				"the source is syncing already; 404 unknown source.",
			Response: Source{}, Handler: func(c fiber.Ctx) error {
				return send(c, http.StatusOK, result(s.Sync(c.Context(), c.Params("source_id"))))
			}},
		{Method: http.MethodGet, Path: "/api/v1/run/sources/{source_id}/diagnostics", Tags: st, Summary: "Last sync of a source",
			Description: "State, last error, attempt and success times, duration and per-step timings, whether the directory exists.",
			Response:    Diagnostics{}, Handler: func(c fiber.Ctx) error { return send(c, http.StatusOK, result(s.Diagnostics(c.Params("source_id")))) }},
	}
}

// outcome is a domain method's answer, for send.
type outcome struct {
	v   any
	err error
}

func result[T any](v T, err error) outcome { return outcome{v, err} }

// send encodes a domain result, or returns its error to the host.
func send(c fiber.Ctx, status int, o outcome) error {
	if o.err != nil {
		return o.err
	}
	return platform.JSON(c, status, o.v)
}

func (s *Service) handleCreateProfile(c fiber.Ctx) error {
	var req CreateProfile
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	return send(c, http.StatusCreated, result(s.CreateProfile(req)))
}

func (s *Service) handlePatchProfile(c fiber.Ctx) error {
	v, _, err := ifMatch(c.Get("If-Match"))
	if err != nil {
		return err
	}
	var req PatchProfile
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	return send(c, http.StatusOK, result(s.PatchProfile(c.Params("profile"), v, req)))
}

func (s *Service) handleCreateSource(c fiber.Ctx) error {
	var req CreateSource
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	return send(c, http.StatusCreated, result(s.CreateSource(req)))
}

func (s *Service) handlePatchSource(c fiber.Ctx) error {
	v, _, err := ifMatch(c.Get("If-Match"))
	if err != nil {
		return err
	}
	var req PatchSource
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	return send(c, http.StatusOK, result(s.PatchSource(c.Params("source_id"), v, req)))
}
