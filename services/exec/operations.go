package exec

import (
	"context"
	"sort"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/fault"
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
		return fault.Invalid("name", "required")
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

// List answers the loaded schedules by name.
func (s *Service) List(context.Context) (List, error) {
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
	return l, nil
}

// Trigger runs a schedule now.
func (s *Service) Trigger(_ context.Context, req TriggerRequest) (Run, error) {
	name := req.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[name]
	if !ok {
		return Run{}, fault.NotFound("schedule", name)
	}
	return s.fire(e, "manual", nil)
}

// Reload re-reads the file; a bad file changes nothing.
func (s *Service) Reload(context.Context) (Reloaded, error) {
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
	s.deps.Journal.Record(contract.JournalEntry{Time: s.deps.Clock.Now(), Source: "exec", Level: "info",
		Message: "schedules reloaded", Fields: map[string]any{"added": r.Added, "changed": r.Changed, "removed": r.Removed}})
	return r, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
