package cron

import (
	"context"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// The service's store keeps what a crontab has no place for: each entry's
// runner policies (keyed by entry id), the run records and the runner's
// checkpoint. The crontab stays the only source of the entries themselves.
const (
	bucketPolicies = "policies"
	bucketRuns     = "runs"
	bucketState    = "state"

	keyCheckpoint = "checkpoint" // the last time the runner looked at the schedules
	keyBootID     = "boot_id"    // the boot whose @reboot entries ran

	// maxRuns bounds the run records kept; the oldest go first.
	maxRuns = 1000
)

// Policy is an entry's runner policies; empty fields are the defaults.
type Policy struct {
	Overlap string `json:"overlap,omitempty"`
	Catchup string `json:"catchup,omitempty"`
}

func (p Policy) overlap() string {
	if p.Overlap == "" {
		return "allow"
	}
	return p.Overlap
}

func (p Policy) catchup() string {
	if p.Catchup == "" {
		return "none"
	}
	return p.Catchup
}

func (p Policy) isDefault() bool { return p.overlap() == "allow" && p.catchup() == "none" }

// The declared tables: policies by entry id (listed whole), and run
// records by sequence number (key order is start order) with the entry
// and status indexed for the list and the restart's sweep.
var (
	policyTable = store.Declare(bucketPolicies, []store.Field[Policy]{})
	runTable    = store.Declare(bucketRuns, []store.Field[Run]{
		store.Text("entry_id", func(r *Run) string { return r.EntryID }),
		store.Text("status", func(r *Run) string { return r.Status }),
	}, store.Index{Fields: []string{"entry_id"}}, store.Index{Fields: []string{"status"}})
)

func (s *Service) policies() (map[string]Policy, error) {
	out := map[string]Policy{}
	err := s.deps.Store.View(func(tx *store.Tx) error {
		pols, ids, err := store.All[Policy](tx, policyTable, store.Query{})
		for i, id := range ids {
			out[id] = pols[i]
		}
		return err
	})
	if err != nil {
		return nil, fault.Internal("read the entries' policies", err)
	}
	return out, nil
}

func (s *Service) policy(id string) (Policy, error) {
	var p Policy
	err := s.deps.Store.View(func(tx *store.Tx) error { _, err := tx.Get(bucketPolicies, id, &p); return err })
	if err != nil {
		return Policy{}, fault.Internal("read the entry's policies", err)
	}
	return p, nil
}

// stagePolicy stores pol for the entry now on line index of d (its id may
// differ from oldID after an edit) and registers the undo on d.
func (s *Service) stagePolicy(d *doc, index int, oldID string, pol Policy) error {
	newID := ""
	for _, pe := range d.entries() {
		if pe.Index == index {
			newID = pe.ID
		}
	}
	if newID == "" {
		return fault.Internal("find the edited entry", nil)
	}
	return s.putPolicies(d, map[string]*Policy{oldID: nil, newID: policyOrNil(pol)})
}

func policyOrNil(p Policy) *Policy {
	if p.isDefault() {
		return nil
	}
	return &p
}

// dropPolicy forgets a deleted entry's policies.
func (s *Service) dropPolicy(d *doc, id string) error {
	return s.putPolicies(d, map[string]*Policy{id: nil})
}

// putPolicies sets (nil: deletes) policies in one transaction and puts the
// reverse change on d.undo.
func (s *Service) putPolicies(d *doc, set map[string]*Policy) error {
	before := map[string]*Policy{}
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		for id := range set {
			if id == "" {
				continue
			}
			var old Policy
			if ok, err := tx.Get(bucketPolicies, id, &old); err != nil {
				return err
			} else if ok {
				before[id] = &old
			} else {
				before[id] = nil
			}
		}
		// Deletions first, so a policy moved from an id to itself stays.
		for id, p := range set {
			if id != "" && p == nil {
				if err := tx.Delete(bucketPolicies, id); err != nil {
					return err
				}
			}
		}
		for id, p := range set {
			if id != "" && p != nil {
				if err := tx.Put(bucketPolicies, id, p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fault.Internal("store the entry's policies", err)
	}
	d.undo = append(d.undo, func() {
		_ = s.deps.Store.Update(func(tx *store.Tx) error {
			for id, p := range before {
				if p == nil {
					_ = tx.Delete(bucketPolicies, id)
				} else {
					_ = tx.Put(bucketPolicies, id, p)
				}
			}
			return nil
		})
	})
	return nil
}

// Run is one run of an entry.
type Run struct {
	ID          string     `json:"id" required:"true"`
	EntryID     string     `json:"entry_id" required:"true"`
	Schedule    string     `json:"schedule" required:"true"`
	Command     string     `json:"command" required:"true"`
	User        string     `json:"user,omitempty" doc:"the user it ran as (system-format crontabs)"`
	Trigger     string     `json:"trigger" required:"true" enum:"schedule,catchup,manual,reboot" doc:"what started it: its schedule, catch-up after downtime, POST .../run, or @reboot at the first start after a boot"`
	ScheduledAt *time.Time `json:"scheduled_at" doc:"the schedule time it stands for (null for a manual run)"`
	Status      string     `json:"status" required:"true" enum:"queued,running,succeeded,failed,skipped,interrupted" doc:"queued: waiting for the previous run (overlap=queue); skipped: the overlap policy skip dropped it; interrupted: the service stopped during the run"`
	StartedAt   time.Time  `json:"started_at" required:"true"`
	EndedAt     *time.Time `json:"ended_at" doc:"null while running"`
	ExitCode    *int       `json:"exit_code" doc:"null while running, when skipped, and when the command could not start (see error)"`
	Output      string     `json:"output" required:"true" doc:"the last 4 KiB of stdout and stderr together"`
	Error       string     `json:"error,omitempty" doc:"why the command could not start or was stopped"`
}

// RunList is the answer of GET /api/v1/cron/runs.
type RunList struct {
	Runs      []Run `json:"runs" required:"true" doc:"newest first"`
	Truncated bool  `json:"truncated" required:"true" doc:"more runs match than limit"`
}

// saveRun writes (or rewrites) a run record; a new record gets its id and
// the oldest records beyond maxRuns go.
func (s *Service) saveRun(r *Run) error {
	return s.deps.Store.Update(func(tx *store.Tx) error {
		if r.ID == "" {
			n, err := tx.NextSeq(bucketRuns)
			if err != nil {
				return err
			}
			r.ID = store.SeqKey(n)
			if over := tx.Count(bucketRuns) + 1 - maxRuns; over > 0 {
				old, err := tx.Page(runTable, store.Query{Limit: over, SkipTotal: true})
				if err != nil {
					return err
				}
				for _, it := range old.Items {
					if err := tx.Delete(bucketRuns, it.Key); err != nil {
						return err
					}
				}
			}
		}
		return tx.Put(bucketRuns, r.ID, r)
	})
}

// RunFilter is the query of GET /api/v1/cron/runs.
type RunFilter struct {
	Entry string `query:"entry" doc:"only runs of this entry id"`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"at most this many runs"` // maximum: maxRuns
}

// Runs lists run records newest first, of one entry when f.Entry is set.
func (s *Service) Runs(_ context.Context, f RunFilter) (RunList, error) {
	out := RunList{Runs: []Run{}}
	if f.Limit <= 0 {
		return out, nil
	}
	var fs []store.Filter
	if f.Entry != "" {
		fs = append(fs, store.Where("entry_id", store.Eq, f.Entry))
	}
	err := s.deps.Store.View(func(tx *store.Tx) error {
		pg, err := store.PageOf[Run](tx, runTable, store.Query{Filters: fs, Desc: true, Limit: f.Limit, SkipTotal: true})
		out.Runs, out.Truncated = pg.Items, pg.Next != ""
		return err
	})
	if err != nil {
		return RunList{}, fault.Internal("read the runs", err)
	}
	return out, nil
}

// markInterrupted closes the records of runs a previous process left
// running (it stopped or was killed during them).
func (s *Service) markInterrupted(now time.Time) error {
	return s.deps.Store.Update(func(tx *store.Tx) error {
		open, _, err := store.All[Run](tx, runTable, store.Query{
			Filters: []store.Filter{store.Where("status", store.In, []string{"running", "queued"})}})
		if err != nil {
			return err
		}
		for _, r := range open {
			r.Status, r.EndedAt, r.Error = "interrupted", &now, "the cron service stopped during the run"
			if err := tx.Put(bucketRuns, r.ID, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Service) loadState(key string, v any) (bool, error) {
	var ok bool
	err := s.deps.Store.View(func(tx *store.Tx) error {
		var err error
		ok, err = tx.Get(bucketState, key, v)
		return err
	})
	return ok, err
}

func (s *Service) saveState(key string, v any) error {
	return s.deps.Store.Update(func(tx *store.Tx) error { return tx.Put(bucketState, key, v) })
}
