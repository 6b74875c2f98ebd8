package run

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	pt, st := []string{"profiles"}, []string{"sources"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/run/profiles", OperationID: "listProfiles", Tags: pt, Summary: "List profiles and the active one",
			Op: platform.ReadOp(s.ListProfiles)},
		{Method: http.MethodPost, Path: "/api/v1/run/profiles", OperationID: "createProfile", Tags: pt, Summary: "Create a profile",
			Description: "201 with the profile at version 1. The first profile becomes active. 409 when the name is taken.",
			Status:      http.StatusCreated, Op: platform.Op(s.NewProfile)},
		{Method: http.MethodPatch, Path: "/api/v1/run/profiles/{profile}", OperationID: "patchProfile", Tags: pt, Summary: "Change a profile",
			Description: "Fields given replace the profile's; env is merged (null removes a variable). 404 unknown profile; " +
				"409 when If-Match names another version.",
			Op: platform.Op(s.EditProfile)},
		{Method: http.MethodDelete, Path: "/api/v1/run/profiles/{profile}", OperationID: "deleteProfile", Tags: pt, Summary: "Delete a profile",
			Description: "204; deleting the active profile leaves none active. 404 unknown profile.",
			Status:      http.StatusNoContent, Op: platform.CommandOp(s.RemoveProfile)},
		{Method: http.MethodPost, Path: "/api/v1/run/profiles/{profile}/select", OperationID: "selectProfile", Tags: pt, Summary: "Make a profile the active one",
			Op: platform.Op(s.ActivateProfile)},

		{Method: http.MethodGet, Path: "/api/v1/run/sources", OperationID: "listSources", Tags: st, Summary: "List sources with their last sync",
			Op: platform.ReadOp(s.ListSources)},
		{Method: http.MethodPost, Path: "/api/v1/run/sources", OperationID: "createSource", Tags: st, Summary: "Add a source",
			Description: "201 with the source (state never; POST .../sync to fetch it). 409 when the name is taken or dir overlaps " +
				"another source's. A URL whose host is a loopback, link-local or this machine's own address is refused " +
				"(400 naming url) unless --run-allow-hosts allows it.",
			Status: http.StatusCreated, Op: platform.Op(s.NewSource)},
		{Method: http.MethodPost, Path: "/api/v1/run/sources/sync", OperationID: "syncAllSources", Tags: st, Summary: "Sync every source",
			Description: "Syncs the sources one after another and answers each one's result; a failed source does not stop the rest.",
			Op:          platform.ReadOp(s.SyncAll)},
		{Method: http.MethodPatch, Path: "/api/v1/run/sources/{source_id}", OperationID: "patchSource", Tags: st, Summary: "Change a source",
			Description: "name, url, ref and dir; the type stays. The next sync uses the new values (a new dir starts fresh; the " +
				"old directory is left). 404 unknown source; 409 stale If-Match or a taken name or dir.",
			Op: platform.Op(s.EditSource)},
		{Method: http.MethodDelete, Path: "/api/v1/run/sources/{source_id}", OperationID: "deleteSource", Tags: st, Summary: "Delete a source",
			Description: "204. The synced directory stays unless remove_files=true. 404 unknown source; 409 while it syncs.",
			Status:      http.StatusNoContent, Op: platform.CommandOp(s.RemoveSource)},
		{Method: http.MethodPost, Path: "/api/v1/run/sources/{source_id}/sync", OperationID: "syncSource", Tags: st, Summary: "Sync one source now",
			Description: "Answers when the sync ends: 200 with the source; sync.state is ok or error (with last_error). 409 while " +
				"the source is syncing already; 404 unknown source.",
			Op: platform.Op(s.SyncSource)},
		{Method: http.MethodGet, Path: "/api/v1/run/sources/{source_id}/diagnostics", OperationID: "getSourceDiagnostics", Tags: st, Summary: "Last sync of a source",
			Description: "State, last error, attempt and success times, duration and per-step timings, whether the directory exists.",
			Op:          platform.Op(s.SourceDiagnostics)},
	}
}
