package cron

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// ValidateRequest is the body of POST /api/v1/cron/validate.
type ValidateRequest struct {
	Schedule string `json:"schedule" required:"true"`
	Timezone string `json:"timezone" doc:"IANA zone for next_runs (default: the service's local zone), as a CRON_TZ= line above the entry would set it"`
	Count    int    `json:"count" doc:"how many next times, 1 to 100 (default 5)"`
}

// Validate checks the schedule, the zone and the count.
func (r *ValidateRequest) Validate() error {
	if err := checkSchedule(r.Schedule); err != nil {
		return err
	}
	if _, err := loadZone(r.Timezone); err != nil {
		return invalidSchedule("timezone", "%s", err.Error())
	}
	if r.Count != 0 && (r.Count < 1 || r.Count > 100) {
		return platform.Invalid("count", "must be 1 to 100")
	}
	return nil
}

// ValidateResult is the answer of a valid schedule.
type ValidateResult struct {
	Schedule string      `json:"schedule" required:"true" doc:"normalised: fields separated by one space"`
	Timezone string      `json:"timezone" required:"true"`
	Reboot   bool        `json:"reboot" required:"true" doc:"@reboot: runs at boot, has no next times"`
	NextRuns []time.Time `json:"next_runs" required:"true"`
}

// CrontabWritten is the answer of PUT /api/v1/cron/crontab.
type CrontabWritten struct {
	ETag    string `json:"etag" required:"true"`
	Bytes   int    `json:"bytes" required:"true"`
	Entries int    `json:"entries" required:"true"`
	Backup  string `json:"backup" required:"true" doc:"where the previous content was kept"`
}

// Routes is the cron service's route table (the platform host adds /health
// and the OpenAPI documents).
func (s *Service) Routes() []platform.Route {
	entries := []string{"entries"}
	idPath := "/api/v1/cron/entries/{id}"
	ifMatch := platform.Param{Name: "If-Match", In: "header",
		Description: "the crontab's ETag as last read; a stale one answers 412 and nothing is written. Optional: without it the edit applies to the current crontab"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/cron/entries", Tags: entries, Summary: "List the crontab's entries",
			Description: "Entries in file order, enabled and disabled (a commented-out line that reads as an entry), with " +
				"their next 5 times in their zone (CRON_TZ= lines apply to the entries below them, as in cronie; without " +
				"one the service's local zone; TZ= only sets the jobs' environment). Answers the crontab's ETag in the ETag header.",
			Query:    []platform.Param{{Name: "enabled", Type: "boolean", Description: "only enabled (true) or disabled (false) entries"}},
			Response: EntryList{}, Handler: s.handleList},
		{Method: http.MethodPost, Path: "/api/v1/cron/entries", Tags: entries, Summary: "Add an entry",
			Description: "Appends the entry (after a '# comment' line when comment is set) at the end of the crontab; every " +
				"other line is kept byte for byte. A blank line is put between it and a comment line it would otherwise join. " +
				"overlap and catchup are kept in the service's store under the entry's id (the crontab has no place for them).",
			Query: []platform.Param{ifMatch}, Body: CreateEntry{}, Response: Entry{}, Status: http.StatusCreated, Handler: s.handleCreate},
		{Method: http.MethodGet, Path: idPath, Tags: entries, Summary: "One entry", Response: Entry{}, Handler: s.handleGet},
		{Method: http.MethodPatch, Path: idPath, Tags: entries, Summary: "Change an entry",
			Description: "Rewrites only the entry's line (and its comment line); a change of schedule, user or command gives " +
				"the entry a new id, answered here, and its policies move with it. Changing only overlap or catchup leaves the crontab untouched.",
			Query: []platform.Param{ifMatch}, Body: UpdateEntry{}, Response: Entry{}, Handler: s.handleUpdate},
		{Method: http.MethodDelete, Path: idPath, Tags: entries, Summary: "Delete an entry",
			Description: "Removes the entry's line and its comment line; answers the deleted entry.",
			Query:       []platform.Param{ifMatch}, Response: Entry{}, Handler: s.handleDelete},
		{Method: http.MethodPost, Path: idPath + "/enable", Tags: entries, Summary: "Enable an entry",
			Description: "Uncomments the line (drops the '#' and the blanks after it); the id stays.",
			Query:       []platform.Param{ifMatch}, Response: Entry{}, Handler: s.handleEnable},
		{Method: http.MethodPost, Path: idPath + "/disable", Tags: entries, Summary: "Disable an entry",
			Description: "Comments the line out with '# '; the id stays.",
			Query:       []platform.Param{ifMatch}, Response: Entry{}, Handler: s.handleDisable},
		{Method: http.MethodPost, Path: idPath + "/run", Tags: []string{"runs"}, Summary: "Run an entry now",
			Description: "Starts the entry's command now, as the built-in runner would (with or without --cron-runner): as the " +
				"entry's user, with cron's environment (SHELL=/bin/sh, PATH=/usr/bin:/bin, HOME, LOGNAME, USER) and the crontab's " +
				"variables above the entry, through $SHELL -c, in HOME, with % read as cron does. The entry's overlap policy " +
				"applies: with skip and a run in progress the answer is a skipped run. Answers 202 with the run record; " +
				"follow it at GET /api/v1/cron/runs.",
			Response: Run{}, Status: http.StatusAccepted, Handler: s.handleRun},
		{Method: http.MethodGet, Path: "/api/v1/cron/runs", Tags: []string{"runs"}, Summary: "Run records",
			Description: "Runs newest first: start, end, exit code and the last 4 KiB of output. Kept in the service's store " +
				"across restarts (the newest 1000); a run the service stopped during is recorded as interrupted. MAILTO= is " +
				"not used by the built-in runner: the output is here instead.",
			Query: []platform.Param{
				{Name: "entry", Description: "only runs of this entry id"},
				{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: maxRuns}, Default: "50", Description: "at most this many runs"},
			},
			Response: RunList{}, Handler: s.handleRuns},
		{Method: http.MethodPost, Path: "/api/v1/cron/validate", Tags: []string{"crontab"}, Summary: "Validate a schedule",
			Description: "Parses a schedule as the crontab would hold it (five fields, names for months and days, 7 for Sunday, " +
				"or an @ macro; @every and seconds are refused since cron reads neither). Valid: 200 with the next times; " +
				"invalid: 400 INVALID_SCHEDULE naming schedule or timezone.",
			Body: ValidateRequest{}, Response: ValidateResult{}, Handler: s.handleValidate},
		{Method: http.MethodGet, Path: "/api/v1/cron/crontab", Tags: []string{"crontab"}, Summary: "The raw crontab",
			Description: "The crontab's exact bytes as text/plain, with its ETag. An absent crontab is empty.",
			ContentType: "text/plain", Handler: s.handleRaw},
		{Method: http.MethodPut, Path: "/api/v1/cron/crontab", Tags: []string{"crontab"}, Summary: "Replace the raw crontab",
			Description: "The body (any content type) becomes the crontab byte for byte, atomically, the previous content kept " +
				"as the backup. If-Match is required here (428 without it; \"*\" accepts any current content): of two writers " +
				"holding the same ETag exactly one wins, the other gets 412. A line that looks like an entry but does not " +
				"parse, or a CRON_TZ that is not a zone, answers 400 INVALID_SCHEDULE naming the line; other lines are kept as " +
				"written (with the crontab command, which checks the syntax itself, a text it refuses is a 400 too).",
			Query:    []platform.Param{{Name: "If-Match", In: "header", Required: true, Description: "the ETag of GET /api/v1/cron/crontab, or *"}},
			Response: CrontabWritten{}, Handler: s.handlePutRaw},
	}
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	l, err := s.List(c.Context())
	if err != nil {
		return err
	}
	if q.Has("enabled") {
		keep := []Entry{}
		for _, e := range l.Entries {
			if e.Enabled == q.Bool("enabled") {
				keep = append(keep, e)
			}
		}
		l.Entries = keep
	}
	c.Set(fiber.HeaderETag, l.ETag)
	return platform.JSON(c, http.StatusOK, l)
}

func entryAnswer(c fiber.Ctx, status int, e Entry, etag string, err error) error {
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, etag)
	return platform.JSON(c, status, e)
}

func (s *Service) handleCreate(c fiber.Ctx) error {
	var req CreateEntry
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	e, etag, err := s.Create(c.Context(), c.Get(fiber.HeaderIfMatch), req)
	return entryAnswer(c, http.StatusCreated, e, etag, err)
}

func (s *Service) handleGet(c fiber.Ctx) error {
	e, etag, err := s.Get(c.Context(), c.Params("id"))
	return entryAnswer(c, http.StatusOK, e, etag, err)
}

func (s *Service) handleUpdate(c fiber.Ctx) error {
	var req UpdateEntry
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	e, etag, err := s.Update(c.Context(), c.Get(fiber.HeaderIfMatch), c.Params("id"), req)
	return entryAnswer(c, http.StatusOK, e, etag, err)
}

func (s *Service) handleDelete(c fiber.Ctx) error {
	e, etag, err := s.Delete(c.Context(), c.Get(fiber.HeaderIfMatch), c.Params("id"))
	return entryAnswer(c, http.StatusOK, e, etag, err)
}

func (s *Service) handleEnable(c fiber.Ctx) error {
	e, etag, err := s.SetEnabled(c.Context(), c.Get(fiber.HeaderIfMatch), c.Params("id"), true)
	return entryAnswer(c, http.StatusOK, e, etag, err)
}

func (s *Service) handleDisable(c fiber.Ctx) error {
	e, etag, err := s.SetEnabled(c.Context(), c.Get(fiber.HeaderIfMatch), c.Params("id"), false)
	return entryAnswer(c, http.StatusOK, e, etag, err)
}

func (s *Service) handleRun(c fiber.Ctx) error {
	r, err := s.RunNow(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusAccepted, r)
}

func (s *Service) handleRuns(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	l, err := s.Runs(q.String("entry"), int(q.Int("limit")))
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, l)
}

func (s *Service) handleValidate(c fiber.Ctx) error {
	var req ValidateRequest
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, s.ValidateSchedule(req))
}

func (s *Service) handleRaw(c fiber.Ctx) error {
	raw, etag, err := s.Raw(c.Context())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	return c.Status(http.StatusOK).Send(raw)
}

func (s *Service) handlePutRaw(c fiber.Ctx) error {
	w, err := s.PutRaw(c.Context(), c.Get(fiber.HeaderIfMatch), c.Body())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderETag, w.ETag)
	return platform.JSON(c, http.StatusOK, w)
}

// ValidateSchedule answers a valid request's normalised schedule and next
// times (the request was validated by Decode).
func (s *Service) ValidateSchedule(req ValidateRequest) ValidateResult {
	spec := strings.Join(strings.Fields(req.Schedule), " ")
	sch, _ := parseSpec(spec, req.Timezone)
	n := req.Count
	if n == 0 {
		n = 5
	}
	tz := req.Timezone
	if tz == "" {
		tz = localZone()
	}
	return ValidateResult{Schedule: spec, Timezone: tz, Reboot: sch.reboot, NextRuns: sch.next(s.deps.Clock.Now(), n)}
}

// Raw is the crontab's bytes and ETag.
func (s *Service) Raw(ctx context.Context) ([]byte, string, error) {
	raw, err := s.backend.read(ctx)
	s.note(err)
	if err != nil {
		return nil, "", err
	}
	return raw, etagOf(raw), nil
}

// PutRaw replaces the crontab when ifMatch is its current ETag (or *).
func (s *Service) PutRaw(ctx context.Context, ifMatch string, body []byte) (CrontabWritten, error) {
	if strings.TrimSpace(ifMatch) == "" {
		return CrontabWritten{}, &platform.Error{Code: platform.CodePreconditionRequired, Details: "If-Match",
			Message: "If-Match: required to replace the crontab (the ETag of GET /api/v1/cron/crontab, or *)"}
	}
	content := append([]byte(nil), body...)
	if n, why := parseCrontab(content, s.system).problems(); n > 0 {
		return CrontabWritten{}, invalidSchedule("crontab line "+strconv.Itoa(n), "%s", why)
	}
	d, err := s.modify(ctx, ifMatch, func(d *doc) error {
		d.lines = parseCrontab(content, s.system).lines
		return nil
	})
	if err != nil {
		return CrontabWritten{}, err
	}
	return CrontabWritten{ETag: etagOf(content), Bytes: len(content), Entries: len(d.entries()), Backup: s.backend.backupPath()}, nil
}

// RunNow starts an entry's command now.
func (s *Service) RunNow(ctx context.Context, id string) (Run, error) {
	d, err := s.readDoc(ctx)
	if err != nil {
		return Run{}, err
	}
	pe, ok := d.find(id)
	if !ok {
		return Run{}, platform.NotFound("entry", id)
	}
	sch, _ := parseSpec(pe.Line.spec, pe.Timezone)
	return s.run.fire(fire{job: job{id: pe.ID, spec: pe.Line.spec, user: pe.Line.user, command: pe.Line.command,
		env: pe.Env, tz: pe.Timezone, sched: sch}, trigger: "manual"})
}
