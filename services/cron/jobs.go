package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"
	robfig "github.com/robfig/cron/v3"

	"deckhand/platform"
	"deckhand/platform/store"
)

const bucketJobs = "jobs"

// parser accepts the five crontab fields and the @ descriptors (@hourly,
// @daily, ... and @every DURATION, which only the built-in runner knows).
var parser = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// Job is a scheduled command.
type Job struct {
	ID        string    `json:"id" required:"true"`
	Name      string    `json:"name" required:"true"`
	Schedule  string    `json:"schedule" required:"true" doc:"five crontab fields or @hourly, @daily, @weekly, @monthly, @yearly, @every DURATION"`
	Command   string    `json:"command" required:"true" doc:"run with /bin/sh -c"`
	Enabled   bool      `json:"enabled" required:"true"`
	CreatedAt time.Time `json:"created_at" required:"true"`
	LastRun   *Run      `json:"last_run" doc:"null until the job first ran"`
}

// Run is the outcome of one run of a job.
type Run struct {
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	ExitCode   int       `json:"exit_code" doc:"-1 when the command could not start"`
	Output     string    `json:"output" doc:"the last 4 KiB of stdout and stderr"`
}

// CreateJob is the body of POST /api/v1/cron/jobs.
type CreateJob struct {
	Name     string `json:"name" doc:"default: the job id"`
	Schedule string `json:"schedule" required:"true"`
	Command  string `json:"command" required:"true"`
	Enabled  *bool  `json:"enabled" doc:"default true"`
}

// Validate checks the schedule and command.
func (r *CreateJob) Validate() error {
	if strings.TrimSpace(r.Schedule) == "" {
		return platform.Invalid("schedule", "is required")
	}
	if _, err := parser.Parse(r.Schedule); err != nil {
		return platform.Invalid("schedule", "must be five crontab fields or an @ descriptor (%s)", err.Error())
	}
	if strings.ContainsAny(r.Schedule, "\n\r") {
		return platform.Invalid("schedule", "must be one line")
	}
	if strings.TrimSpace(r.Command) == "" {
		return platform.Invalid("command", "is required")
	}
	if strings.ContainsAny(r.Command, "\n\r\x00") || strings.Contains(r.Command, "%") {
		return platform.Invalid("command", "must be one line without %q (crontab reads it as a newline)", "%")
	}
	if len(r.Name) > 200 || !utf8.ValidString(r.Name) || strings.ContainsAny(r.Name, "\n\r") {
		return platform.Invalid("name", "must be one line of at most 200 bytes")
	}
	return nil
}

// JobList is the answer of GET /api/v1/cron/jobs.
type JobList struct {
	Jobs      []Job `json:"jobs" required:"true"`
	Truncated bool  `json:"truncated" required:"true" doc:"more jobs match than limit"`
}

// Routes is the cron service's route table (the platform host adds /health
// and the OpenAPI documents).
func (s *Service) Routes() []platform.Route {
	tags := []string{"jobs"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/cron/jobs", Tags: tags, Summary: "List jobs",
			Description: "Jobs oldest first, with their last run.",
			Query: []platform.Param{
				{Name: "enabled", Type: "boolean", Description: "only enabled (true) or disabled (false) jobs"},
				{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: 1000}, Default: "100", Description: "at most this many jobs"},
			},
			Response: JobList{}, Handler: s.handleList},
		{Method: http.MethodPost, Path: "/api/v1/cron/jobs", Tags: tags, Summary: "Create a job",
			Description: "Stores the job, rewrites the crontab file and, with the runner on, schedules it. " +
				"A run's failure (non-zero exit) is written to the journal and sent as a schedule.failed notification.",
			Body: CreateJob{}, Response: Job{}, Status: http.StatusCreated, Handler: s.handleCreate},
		{Method: http.MethodGet, Path: "/api/v1/cron/jobs/{id}", Tags: tags, Summary: "One job",
			Response: Job{}, Handler: s.handleGet},
		{Method: http.MethodDelete, Path: "/api/v1/cron/jobs/{id}", Tags: tags, Summary: "Delete a job",
			Description: "Unschedules the job (a run in progress finishes), rewrites the crontab and answers the deleted job.",
			Response:    Job{}, Handler: s.handleDelete},
	}
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	jobs, err := s.list()
	if err != nil {
		return err
	}
	out := JobList{Jobs: []Job{}}
	for _, j := range jobs {
		if q.Has("enabled") && j.Enabled != q.Bool("enabled") {
			continue
		}
		if int64(len(out.Jobs)) == q.Int("limit") {
			out.Truncated = true
			break
		}
		out.Jobs = append(out.Jobs, j)
	}
	return platform.JSON(c, http.StatusOK, out)
}

func (s *Service) handleCreate(c fiber.Ctx) error {
	var req CreateJob
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	j, err := s.Create(c.Context(), req)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusCreated, j)
}

func (s *Service) handleGet(c fiber.Ctx) error {
	j, err := s.get(c.Params("id"))
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, j)
}

func (s *Service) handleDelete(c fiber.Ctx) error {
	j, err := s.Delete(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, j)
}

// Create stores a job, rewrites the crontab and schedules it.
func (s *Service) Create(_ context.Context, req CreateJob) (Job, error) {
	if err := req.Validate(); err != nil {
		return Job{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := Job{Name: req.Name, Schedule: strings.TrimSpace(req.Schedule), Command: req.Command, Enabled: true,
		CreatedAt: s.deps.Clock.Now()}
	if req.Enabled != nil {
		j.Enabled = *req.Enabled
	}
	err := s.deps.Store.Update(func(tx *store.Tx) error {
		n, err := tx.NextSeq(bucketJobs)
		if err != nil {
			return err
		}
		j.ID = fmt.Sprintf("job_%d", n)
		if j.Name == "" {
			j.Name = j.ID
		}
		return tx.Put(bucketJobs, store.SeqKey(n), j)
	})
	if err != nil {
		return Job{}, platform.Internal("store the job", err)
	}
	if err := s.rewrite(); err != nil {
		return Job{}, err
	}
	s.schedule(j)
	return j, nil
}

// Delete removes a job.
func (s *Service) Delete(_ context.Context, id string) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, key, err := s.find(id)
	if err != nil {
		return Job{}, err
	}
	if err := s.deps.Store.Update(func(tx *store.Tx) error { return tx.Delete(bucketJobs, key) }); err != nil {
		return Job{}, platform.Internal("delete the job", err)
	}
	if e, ok := s.entries[id]; ok && s.runner != nil {
		s.runner.Remove(e)
		delete(s.entries, id)
	}
	return j, s.rewrite()
}

func (s *Service) get(id string) (Job, error) {
	j, _, err := s.find(id)
	return j, err
}

func (s *Service) find(id string) (Job, string, error) {
	var (
		found Job
		key   string
	)
	err := s.deps.Store.View(func(tx *store.Tx) error {
		return tx.ForEach(bucketJobs, func(k string, raw []byte) error {
			var j Job
			if err := json.Unmarshal(raw, &j); err != nil {
				return err
			}
			if j.ID == id {
				found, key = j, k
			}
			return nil
		})
	})
	if err != nil {
		return Job{}, "", platform.Internal("read the jobs", err)
	}
	if key == "" {
		return Job{}, "", platform.NotFound("job", id)
	}
	return found, key, nil
}

func (s *Service) list() ([]Job, error) {
	jobs := []Job{}
	err := s.deps.Store.View(func(tx *store.Tx) error {
		return tx.ForEach(bucketJobs, func(_ string, raw []byte) error {
			var j Job
			if err := json.Unmarshal(raw, &j); err != nil {
				return err
			}
			jobs = append(jobs, j)
			return nil
		})
	})
	if err != nil {
		return nil, platform.Internal("read the jobs", err)
	}
	return jobs, nil
}

func (s *Service) rewrite() error {
	jobs, err := s.list()
	if err != nil {
		return err
	}
	return s.writeCrontab(jobs)
}

// writeCrontab replaces the crontab file atomically (write, then rename).
// Jobs scheduled with @every have no crontab form; they are listed as
// comments and run only by the built-in runner.
func (s *Service) writeCrontab(jobs []Job) error {
	var b bytes.Buffer
	b.WriteString("# Written by the deckhand cron service; edits are overwritten. Manage jobs through /api/v1/cron/jobs.\n")
	for _, j := range jobs {
		line := j.Schedule + " " + j.Command
		switch {
		case strings.HasPrefix(j.Schedule, "@every"):
			line = "# " + line + "  (runs only in the deckhand cron runner)"
		case !j.Enabled:
			line = "# " + line + "  (disabled)"
		}
		fmt.Fprintf(&b, "# %s %s\n%s\n", j.ID, strings.ReplaceAll(j.Name, "\n", " "), line)
	}
	tmp := s.crontab + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return platform.Internal("write the crontab", err)
	}
	if err := os.Rename(tmp, s.crontab); err != nil {
		return platform.Internal("write the crontab", err)
	}
	return nil
}

// schedule adds an enabled job to the runner (when it runs).
func (s *Service) schedule(j Job) {
	if s.runner == nil || !j.Enabled {
		return
	}
	sched, err := parser.Parse(j.Schedule)
	if err != nil {
		s.log.Error("cron: stored job has a bad schedule", "job", j.ID, "schedule", j.Schedule, "err", err)
		return
	}
	s.entries[j.ID] = s.runner.Schedule(sched, robfig.FuncJob(func() { s.runJob(j) }))
}

// outputTail is how much of a run's output is kept.
const outputTail = 4096

// runJob runs one job's command, records the run on the job and reports a
// failure to the journal and the notifier.
func (s *Service) runJob(j Job) {
	s.runs.Add(1)
	defer s.runs.Done()
	start := s.deps.Clock.Now()
	// A run still going when the service closes is killed, so the agent's
	// stop stays within its budget; WaitDelay stops waiting on output pipes
	// a left-behind grandchild may hold.
	cmd := exec.CommandContext(s.stopCtx, "/bin/sh", "-c", j.Command)
	cmd.WaitDelay = time.Second
	if home, err := os.UserHomeDir(); err == nil {
		cmd.Dir = home // where cron starts a job's shell
	}
	out, err := cmd.CombinedOutput()
	run := Run{StartedAt: start, DurationMS: s.deps.Clock.Now().Sub(start).Milliseconds(), ExitCode: 0}
	if len(out) > outputTail {
		out = out[len(out)-outputTail:]
	}
	run.Output = strings.ToValidUTF8(string(out), "\uFFFD")
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		run.ExitCode = exitErr.ExitCode()
	case err != nil:
		run.ExitCode = -1
		run.Output = err.Error()
	}
	s.mu.Lock()
	if cur, key, ferr := s.find(j.ID); ferr == nil {
		cur.LastRun = &run
		if perr := s.deps.Store.Update(func(tx *store.Tx) error { return tx.Put(bucketJobs, key, cur) }); perr != nil {
			s.log.Error("cron: record run", "job", j.ID, "err", perr)
		}
	}
	s.mu.Unlock()
	level := "info"
	if run.ExitCode != 0 {
		level = "error"
	}
	s.deps.Journal.Record(platform.JournalEntry{Time: start, Source: "cron", Level: level,
		Message: "job " + j.ID + " ran",
		Fields:  map[string]any{"job": j.ID, "name": j.Name, "exit_code": run.ExitCode, "duration_ms": run.DurationMS, "output": run.Output}})
	if run.ExitCode != 0 {
		s.deps.Notifier.Notify(platform.Event{Time: start, Kind: platform.EventScheduleFailed, Source: "cron", Level: "error",
			Title: fmt.Sprintf("Scheduled job %s failed (exit %d)", j.Name, run.ExitCode),
			Body:  run.Output, Data: map[string]any{"job": j.ID, "exit_code": run.ExitCode}})
	}
}
