package exec

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"schedules"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/exec/schedules/list", OperationID: "listSchedules", Tags: tags,
			Summary: "Schedules with next run and last result", Op: platform.ReadOp(s.List)},
		{Method: http.MethodPost, Path: "/api/v1/exec/schedules/trigger", OperationID: "triggerSchedule", Tags: tags, Summary: "Run a schedule now",
			Description: "Starts the schedule's command now (trigger manual); its overlap policy applies, so with skip and a run " +
				"in progress the answer is a skipped run. 202 with the run record; follow it in the history. 404 for an unknown name.",
			Status: http.StatusAccepted, Op: platform.Op(s.Trigger)},
		{Method: http.MethodPost, Path: "/api/v1/exec/schedules/reload", OperationID: "reloadSchedules", Tags: tags, Summary: "Re-read the schedules file",
			Description: "Checks the whole file, then applies it: unchanged schedules keep their next time and runs, changed ones " +
				"start from now, removed ones finish their runs in progress. A bad file answers 400 INVALID naming the field " +
				"(details schedules[N].field, or file for YAML that does not parse) and nothing changes.",
			Op: platform.ReadOp(s.Reload)},
		{Method: http.MethodGet, Path: "/api/v1/exec/schedules/history", OperationID: "listScheduleRuns", Tags: tags,
			Summary: "Run history, newest first", Op: platform.Op(s.History)},
	}
}
