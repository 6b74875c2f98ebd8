// Package exec owns scheduled execution: systemd-timer-like schedules
// (robfig/cron expressions, seconds allowed) read from one file under the
// data directory, run by the service's own loop on an injectable clock
// with a timeout and an overlap policy each; every run is kept in the
// service's store (start, duration, exit code, the ends of stdout and
// stderr) and written to the journal, and a failed or timed-out run is a
// schedule.failed event.
package exec

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// Settings are the exec service's flags.
type Settings struct {
	// Schedules is the schedules file; empty: <data>/exec/schedules.yaml.
	Schedules string
}

// Flags declares --exec-schedules.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Schedules, "exec-schedules", "", "schedules file of the exec service, YAML (default <data>/exec/schedules.yaml)")
}

// Validate checks --exec-schedules.
func (s *Settings) Validate() error {
	if s.Schedules != "" && !filepath.IsAbs(s.Schedules) {
		return fault.Invalid("--exec-schedules", "must be an absolute path, got %q", s.Schedules)
	}
	return nil
}

// Service is the scheduled-execution service.
type Service struct {
	deps    contract.ServiceDeps
	log     *slog.Logger
	path    string
	spawner *proc.Spawner

	mu        sync.Mutex
	entries   map[string]*entry
	lastEnded time.Time // when the last run ended (Activity)
	loadError string    // why the file did not load at start ("" when it did)
	reloadMu  sync.Mutex

	ctx    context.Context // cancelled by Close: runs in progress are stopped
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	closeOnce sync.Once
}

// New reads the schedules file and starts the scheduler. A file that does
// not load leaves the service running with no schedules; the list says
// why, and a reload after fixing it takes it.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	deps, set, err := contract.PrepareService("exec", deps, set)
	if err != nil {
		return nil, err
	}
	path := cmp.Or(set.Schedules, filepath.Join(deps.DataDir, "schedules.yaml"))
	s := &Service{deps: deps, log: deps.Logger, path: path, spawner: proc.NewSpawner(), entries: map[string]*entry{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := deps.Store.Declare(s.ctx, runTable); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if err := s.interruptLeftovers(); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	defs, err := loadFile(path)
	if err != nil {
		s.loadError = fault.Text(err)
		s.log.Error("exec: schedules file not loaded", "err", s.loadError)
		deps.Journal.Record(contract.JournalEntry{Time: deps.Clock.Now(), Source: "exec", Level: "error",
			Message: "schedules file not loaded: " + s.loadError})
	}
	s.mu.Lock()
	s.install(defs)
	s.mu.Unlock()
	go s.loop()
	return s, nil
}

// Close stops the scheduler, stops runs in progress (recorded
// interrupted) and waits for them.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock() // no run starts once fire has seen the cancel
		s.cancel()
		s.mu.Unlock()
		<-s.done
		s.wg.Wait()
		s.spawner.Close()
	})
	return nil
}

// kick wakes the loop (after a reload, or a test moving its clock).
func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "exec",
		Title:   "deckhand scheduled execution",
		Version: platform.Version,
		Description: "Runs commands on schedules, as systemd timers do. Every service answers GET /health and GET " +
			"/openapi.json / /openapi.yaml. The schedules come from one YAML file, --exec-schedules (default " +
			"<data>/exec/schedules.yaml): `schedules:` is a list of {name, schedule, command, timeout, overlap, timezone, " +
			"user, cwd, env}. schedule is a robfig/cron expression: five fields (minute hour day-of-month month " +
			"day-of-week), or six with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly, @every 90s; read in " +
			"timezone (default UTC). command runs with /bin/sh -c in its own process group, as user (the agent must be root " +
			"to switch), in cwd (default the user's home, else /), with env added to the agent's environment less its DECKHAND_* settings. timeout " +
			"(default 1h): a run still going is sent SIGTERM with its whole process tree, SIGKILL 2 s later, and recorded " +
			"timed_out with the output it had written. overlap (default skip, as a systemd timer never starts a unit twice): " +
			"skip records a skipped run, queue runs it after the current one (at most 10 waiting), allow runs it beside. " +
			"When a run's main process ends, what is left of its process group is killed. Due times missed while the " +
			"service was down are not made up; several due times missed in one wait run once. The file is read at start " +
			"(a bad file leaves no schedules, and the list says why) and by POST /api/v1/exec/schedules/reload, which " +
			"checks the whole file first: a bad file is refused with 400 INVALID naming the field (schedules[2].timeout) " +
			"and the schedules already loaded keep running unchanged. History keeps the newest 1000 runs in the service's " +
			"store across restarts (a run the service stopped during is interrupted), with the last 16 KiB of stdout and " +
			"stderr each. Every run is a journal entry of source exec; a failed or timed-out run is a schedule.failed event. " +
			"Errors are {\"code\",\"details\",\"message\"}.",
	}
}
