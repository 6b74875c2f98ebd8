package exec

import (
	"net/http"
	"sort"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// View is a loaded schedule with its next run and last result.
type View struct {
	Schedule
	NextRun *time.Time `json:"next_run" doc:"the next due time (null for a schedule that never comes due again)"`
	Running int        `json:"running" required:"true"`
	Queued  int        `json:"queued" required:"true"`
	LastRun *Run       `json:"last_run" doc:"the newest run record, null before any"`
}

// List is the answer of GET /api/v1/exec/schedules/list.
type List struct {
	File      string `json:"file" required:"true"`
	LoadError string `json:"load_error,omitempty" doc:"why the file did not load when the service started (cleared by a good reload)"`
	Schedules []View `json:"schedules" required:"true"`
}

// TriggerRequest is the body of POST /api/v1/exec/schedules/trigger.
type TriggerRequest struct {
	Name string `json:"name" required:"true" doc:"the schedule to run now"`
}

// Validate checks the name is given.
func (r *TriggerRequest) Validate() error {
	if r.Name == "" {
		return platform.Invalid("name", "required")
	}
	return nil
}

// Reloaded is the answer of a good reload.
type Reloaded struct {
	File      string   `json:"file" required:"true"`
	Schedules int      `json:"schedules" required:"true"`
	Added     []string `json:"added" required:"true"`
	Changed   []string `json:"changed" required:"true"`
	Removed   []string `json:"removed" required:"true"`
}

// HistoryList is the answer of GET /api/v1/exec/schedules/history.
type HistoryList struct {
	Runs []Run `json:"runs" required:"true"`
}

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"schedules"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/exec/schedules/list", Tags: tags, Summary: "Schedules with next run and last result",
			Response: List{}, Handler: s.handleList},
		{Method: http.MethodPost, Path: "/api/v1/exec/schedules/trigger", Tags: tags, Summary: "Run a schedule now",
			Description: "Starts the schedule's command now (trigger manual); its overlap policy applies, so with skip and a run " +
				"in progress the answer is a skipped run. 202 with the run record; follow it in the history. 404 for an unknown name.",
			Body: TriggerRequest{}, Response: Run{}, Status: http.StatusAccepted, Handler: s.handleTrigger},
		{Method: http.MethodPost, Path: "/api/v1/exec/schedules/reload", Tags: tags, Summary: "Re-read the schedules file",
			Description: "Checks the whole file, then applies it: unchanged schedules keep their next time and runs, changed ones " +
				"start from now, removed ones finish their runs in progress. A bad file answers 400 INVALID naming the field " +
				"(details schedules[N].field, or file for YAML that does not parse) and nothing changes.",
			Response: Reloaded{}, Handler: s.handleReload},
		{Method: http.MethodGet, Path: "/api/v1/exec/schedules/history", Tags: tags, Summary: "Run history, newest first",
			Query: []platform.Param{
				{Name: "name", Description: "only runs of this schedule"},
				{Name: "status", Enum: []string{StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusTimedOut, StatusSkipped, StatusInterrupted}, Description: "only runs in this status"},
				{Name: "since", Description: "RFC 3339 time: runs started at or after it"},
				{Name: "until", Description: "RFC 3339 time: runs started before it"},
				{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: maxRuns}, Default: "50", Description: "at most this many runs"},
			},
			Response: HistoryList{}, Handler: s.handleHistory},
	}
}

func (s *Service) handleList(c fiber.Ctx) error {
	return platform.JSON(c, http.StatusOK, s.List())
}

func (s *Service) handleTrigger(c fiber.Ctx) error {
	var req TriggerRequest
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	r, err := s.Trigger(req.Name)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusAccepted, r)
}

func (s *Service) handleReload(c fiber.Ctx) error {
	r, err := s.Reload()
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, r)
}

func (s *Service) handleHistory(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	f := HistoryFilter{Schedule: q.String("name"), Status: q.String("status"), Limit: int(q.Int("limit"))}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.String(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return platform.Invalid(p.name, "must be an RFC 3339 time (2026-01-02T15:04:05Z), got %q", v)
			}
			*p.dst = t
		}
	}
	runs, err := s.History(f)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, HistoryList{Runs: runs})
}

// List answers the loaded schedules by name.
func (s *Service) List() List {
	s.mu.Lock()
	l := List{File: s.path, LoadError: s.loadError, Schedules: []View{}}
	for _, name := range s.names() {
		e := s.entries[name]
		v := View{Schedule: *e.def, Running: e.active, Queued: len(e.queue)}
		if !e.next.IsZero() {
			n := e.next
			v.NextRun = &n
		}
		l.Schedules = append(l.Schedules, v)
	}
	s.mu.Unlock()
	for i := range l.Schedules {
		l.Schedules[i].LastRun = s.lastRun(l.Schedules[i].Name)
	}
	return l
}

// Trigger runs a schedule now.
func (s *Service) Trigger(name string) (Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[name]
	if !ok {
		return Run{}, platform.NotFound("schedule", name)
	}
	return s.fire(e, "manual", nil)
}

// Reload re-reads the file; a bad file changes nothing.
func (s *Service) Reload() (Reloaded, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	defs, err := loadFile(s.path)
	if err != nil {
		return Reloaded{}, err
	}
	s.mu.Lock()
	added, changed, removed := s.install(defs)
	s.loadError = ""
	n := len(s.entries)
	s.mu.Unlock()
	s.kick()
	for _, l := range [][]string{added, changed, removed} {
		sort.Strings(l)
	}
	r := Reloaded{File: s.path, Schedules: n, Added: nonNil(added), Changed: nonNil(changed), Removed: nonNil(removed)}
	s.deps.Journal.Record(platform.JournalEntry{Time: s.deps.Clock.Now(), Source: "exec", Level: "info",
		Message: "schedules reloaded", Fields: map[string]any{"added": r.Added, "changed": r.Changed, "removed": r.Removed}})
	return r, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
