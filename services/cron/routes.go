package cron

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the cron service's route table (the platform host adds /health
// and the OpenAPI documents).
func (s *Service) Routes() []platform.Route {
	entries, runs, crontab := []string{"entries"}, []string{"runs"}, []string{"crontab"}
	idPath := "/api/v1/cron/entries/{id}"
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/cron/entries", OperationID: "listEntries", Tags: entries, Summary: "List the crontab's entries",
			Description: "Entries in file order, enabled and disabled (a commented-out line that reads as an entry), with " +
				"their next 5 times in their zone (CRON_TZ= lines apply to the entries below them, as in cronie; without " +
				"one the service's local zone; TZ= only sets the jobs' environment). Answers the crontab's ETag in the ETag header.",
			Op: platform.Op(s.List)},
		{Method: http.MethodPost, Path: "/api/v1/cron/entries", OperationID: "createEntry", Tags: entries, Summary: "Add an entry",
			Description: "Appends the entry (after a '# comment' line when comment is set) at the end of the crontab; every " +
				"other line is kept byte for byte. A blank line is put between it and a comment line it would otherwise join. " +
				"overlap and catchup are kept in the service's store under the entry's id (the crontab has no place for them).",
			Status: http.StatusCreated, Op: platform.Op(s.Create)},
		{Method: http.MethodGet, Path: idPath, OperationID: "getEntry", Tags: entries, Summary: "One entry", Op: platform.Op(s.Get)},
		{Method: http.MethodPatch, Path: idPath, OperationID: "updateEntry", Tags: entries, Summary: "Change an entry",
			Description: "Rewrites only the entry's line (and its comment line); a change of schedule, user or command gives " +
				"the entry a new id, answered here, and its policies move with it. Changing only overlap or catchup leaves the crontab untouched.",
			Op: platform.Op(s.Update)},
		{Method: http.MethodDelete, Path: idPath, OperationID: "deleteEntry", Tags: entries, Summary: "Delete an entry",
			Description: "Removes the entry's line and its comment line; answers the deleted entry.", Op: platform.Op(s.Delete)},
		{Method: http.MethodPost, Path: idPath + "/enable", OperationID: "enableEntry", Tags: entries, Summary: "Enable an entry",
			Description: "Uncomments the line (drops the '#' and the blanks after it); the id stays.", Op: platform.Op(s.Enable)},
		{Method: http.MethodPost, Path: idPath + "/disable", OperationID: "disableEntry", Tags: entries, Summary: "Disable an entry",
			Description: "Comments the line out with '# '; the id stays.", Op: platform.Op(s.Disable)},
		{Method: http.MethodPost, Path: idPath + "/run", OperationID: "runEntry", Tags: runs, Summary: "Run an entry now",
			Description: "Starts the entry's command now, as the built-in runner would (with or without --cron-runner): as the " +
				"entry's user, with cron's environment (SHELL=/bin/sh, PATH=/usr/bin:/bin, HOME, LOGNAME, USER) and the crontab's " +
				"variables above the entry, through $SHELL -c, in HOME, with % read as cron does. The entry's overlap policy " +
				"applies: with skip and a run in progress the answer is a skipped run. Answers 202 with the run record; " +
				"follow it at GET /api/v1/cron/runs.",
			Status: http.StatusAccepted, Op: platform.Op(s.RunNow)},
		{Method: http.MethodGet, Path: "/api/v1/cron/runs", OperationID: "listRuns", Tags: runs, Summary: "Run records",
			Description: "Runs newest first: start, end, exit code and the last 4 KiB of output. Kept in the service's store " +
				"across restarts (the newest 1000); a run the service stopped during is recorded as interrupted. MAILTO= is " +
				"not used by the built-in runner: the output is here instead.",
			Op: platform.Op(s.Runs)},
		{Method: http.MethodPost, Path: "/api/v1/cron/validate", OperationID: "validateSchedule", Tags: crontab, Summary: "Validate a schedule",
			Description: "Parses a schedule as the crontab would hold it (five fields, names for months and days, 7 for Sunday, " +
				"or an @ macro; @every and seconds are refused since cron reads neither). Valid: 200 with the next times; " +
				"invalid: 400 INVALID_SCHEDULE naming schedule or timezone.",
			Op: platform.Op(s.ValidateSchedule)},
		{Method: http.MethodGet, Path: "/api/v1/cron/crontab", OperationID: "getCrontab", Tags: crontab, Summary: "The raw crontab",
			Description: "The crontab's exact bytes as text/plain, with its ETag. An absent crontab is empty.",
			ContentType: "text/plain; charset=utf-8", Op: platform.ReadOp(s.Raw)},
		{Method: http.MethodPut, Path: "/api/v1/cron/crontab", OperationID: "putCrontab", Tags: crontab, Summary: "Replace the raw crontab",
			Description: "The body (any content type) becomes the crontab byte for byte, atomically, the previous content kept " +
				"as the backup. If-Match is required here (428 without it; \"*\" accepts any current content): of two writers " +
				"holding the same ETag exactly one wins, the other gets 412. A line that looks like an entry but does not " +
				"parse, or a CRON_TZ that is not a zone, answers 400 INVALID_SCHEDULE naming the line; other lines are kept as " +
				"written (with the crontab command, which checks the syntax itself, a text it refuses is a 400 too).",
			RequestType: "text/plain", Op: platform.Op(s.PutRaw)},
	}
}
