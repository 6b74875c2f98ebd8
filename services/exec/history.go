package exec

import (
	"context"
	"fmt"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Run statuses.
const (
	StatusRunning     = "running"
	StatusQueued      = "queued"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusTimedOut    = "timed_out"
	StatusSkipped     = "skipped"
	StatusInterrupted = "interrupted"
)

// Run is one run of a schedule, as the history keeps it.
type Run struct {
	ID              string     `json:"id" required:"true"`
	Schedule        string     `json:"schedule" required:"true" doc:"the schedule's name"`
	Trigger         string     `json:"trigger" required:"true" enum:"schedule,manual"`
	ScheduledAt     *time.Time `json:"scheduled_at,omitempty" doc:"the due time that started it (trigger schedule)"`
	StartedAt       time.Time  `json:"started_at" required:"true"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	DurationSeconds float64    `json:"duration_seconds" required:"true"`
	Status          string     `json:"status" required:"true" enum:"queued,running,succeeded,failed,timed_out,skipped,interrupted"`
	ExitCode        *int       `json:"exit_code" doc:"null while running, when skipped, or when the command could not start; 128+N when killed by signal N"`
	Error           string     `json:"error,omitempty" doc:"why it did not start, or was skipped or interrupted"`
	Stdout          string     `json:"stdout" required:"true" doc:"the last 16 KiB of standard output"`
	Stderr          string     `json:"stderr" required:"true" doc:"the last 16 KiB of standard error"`
	StdoutTruncated bool       `json:"stdout_truncated" required:"true"`
	StderrTruncated bool       `json:"stderr_truncated" required:"true"`
}

const (
	bucketRuns = "runs"
	// maxRuns bounds the history; the oldest records go first.
	maxRuns = 1000
)

// runTable is the history: records keyed by their sequence number (so key
// order is start order), listed by schedule and status through their
// indexes.
var runTable = store.Declare(bucketRuns, []store.Field[Run]{
	store.Text("schedule", func(r *Run) string { return r.Schedule }),
	store.Text("status", func(r *Run) string { return r.Status }),
	store.Time("started_at", func(r *Run) time.Time { return r.StartedAt }),
}, store.Index{Fields: []string{"schedule"}}, store.Index{Fields: []string{"status"}})

// runKey orders records by their sequence number.
func runKey(seq uint64) string { return fmt.Sprintf("%016x", seq) }

// newRun stores a new record and answers it with its id.
func (s *Service) newRun(r Run) (Run, error) {
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		seq, err := tx.NextSeq(bucketRuns)
		if err != nil {
			return err
		}
		r.ID = runKey(seq)
		if err := tx.Put(bucketRuns, r.ID, r); err != nil {
			return err
		}
		// Drop the oldest beyond maxRuns.
		if n := tx.Count(bucketRuns); n > maxRuns {
			old, err := tx.Page(runTable, store.Query{Limit: n - maxRuns, SkipTotal: true})
			if err != nil {
				return err
			}
			for _, it := range old.Items {
				if err := tx.Delete(bucketRuns, it.Key); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return Run{}, fault.Internal("record the run", err)
	}
	return r, nil
}

// saveRun rewrites a record (its end).
func (s *Service) saveRun(r Run) {
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		if tx.GetRaw(bucketRuns, r.ID) == nil {
			return nil // pruned meanwhile
		}
		return tx.Put(bucketRuns, r.ID, r)
	})
	if err != nil {
		s.log.Error("exec: record run", "run", r.ID, "err", err)
	}
}

// interruptLeftovers marks runs a previous process left running or
// queued: it stopped during them.
func (s *Service) interruptLeftovers() error {
	return s.deps.Store.Update(func(tx *store.Tx) error {
		fix, _, err := store.All[Run](tx, runTable, store.Query{
			Filters: []store.Filter{store.Where("status", store.In, []string{StatusRunning, StatusQueued})}})
		if err != nil {
			return err
		}
		for _, r := range fix {
			r.Status, r.Error = StatusInterrupted, "the exec service stopped during the run"
			if err := tx.Put(bucketRuns, r.ID, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// HistoryFilter selects runs (the query of GET .../schedules/history).
type HistoryFilter struct {
	Schedule string    `query:"name" doc:"only runs of this schedule"`
	Status   string    `query:"status" enum:"queued,running,succeeded,failed,timed_out,skipped,interrupted" doc:"only runs in this status"`
	Since    time.Time `query:"since" doc:"runs started at or after this time"`
	Until    time.Time `query:"until" doc:"runs started before this time"`
	Limit    int       `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"at most this many runs"` // maximum: maxRuns
}

// History answers runs newest first.
func (s *Service) History(_ context.Context, f HistoryFilter) (HistoryList, error) {
	runs, err := s.runs(f)
	return HistoryList{Runs: runs}, err
}

func (s *Service) runs(f HistoryFilter) ([]Run, error) {
	if f.Limit <= 0 {
		return []Run{}, nil
	}
	var fs []store.Filter
	if f.Schedule != "" {
		fs = append(fs, store.Where("schedule", store.Eq, f.Schedule))
	}
	if f.Status != "" {
		fs = append(fs, store.Where("status", store.Eq, f.Status))
	}
	if !f.Since.IsZero() {
		fs = append(fs, store.Where("started_at", store.Gte, f.Since))
	}
	if !f.Until.IsZero() {
		fs = append(fs, store.Where("started_at", store.Lt, f.Until))
	}
	var pg store.Page[Run]
	err := s.deps.Store.View(func(tx *store.Tx) error {
		var err error
		pg, err = store.PageOf[Run](tx, runTable, store.Query{Filters: fs, Desc: true, Limit: f.Limit, SkipTotal: true})
		return err
	})
	if err != nil {
		return nil, fault.Internal("read the history", err)
	}
	return pg.Items, nil
}

// lastRun is the newest finished-or-running record of a schedule.
func (s *Service) lastRun(name string) *Run {
	runs, err := s.runs(HistoryFilter{Schedule: name, Limit: 1})
	if err != nil || len(runs) == 0 {
		return nil
	}
	return &runs[0]
}
