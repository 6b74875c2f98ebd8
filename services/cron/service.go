// Package cron owns the container's cron service: scheduled jobs kept in
// the service's own store, written to a crontab file (--crontab) for a
// system cron daemon, and run by the service itself unless
// --cron-runner=false. A run that fails is written to the journal and
// becomes a schedule.failed notification through the seams the agent wires.
package cron

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	robfig "github.com/robfig/cron/v3"
	"github.com/spf13/pflag"

	"deckhand/platform"
)

// Settings are the cron service's flags.
type Settings struct {
	// Crontab is the crontab file kept in step with the jobs (user-crontab
	// format: five time fields, then the command). Empty: <data>/cron/crontab.
	Crontab string
	// Runner runs the jobs in the service. Off, a system cron daemon is
	// expected to read Crontab.
	Runner bool
}

// Flags declares --crontab and --cron-runner.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Crontab, "crontab", "", "crontab file the cron service keeps in step with its jobs (default <data>/cron/crontab)")
	fs.BoolVar(&s.Runner, "cron-runner", true, "run scheduled jobs in the cron service (false: leave them to a system cron daemon reading --crontab)")
}

// Service is the cron service.
type Service struct {
	deps    platform.ServiceDeps
	set     Settings
	crontab string
	log     *slog.Logger

	mu      sync.Mutex // job changes and the crontab file
	runner  *robfig.Cron
	entries map[string]robfig.EntryID
	runs    sync.WaitGroup
	stopCtx context.Context // cancelled by Close: runs in progress are killed
	stop    context.CancelFunc
}

// New builds the cron service: it loads the stored jobs, writes the crontab
// and, with the runner on, schedules them.
func New(deps platform.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = &Settings{Runner: true}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Clock == nil {
		deps.Clock = platform.SystemClock{}
	}
	if deps.Journal == nil {
		deps.Journal = platform.LogJournal{Logger: deps.Logger}
	}
	if deps.Notifier == nil {
		deps.Notifier = platform.LogNotifier{Logger: deps.Logger}
	}
	if deps.Store == nil {
		return nil, fmt.Errorf("cron: no store")
	}
	s := &Service{deps: deps, set: *set, log: deps.Logger, entries: map[string]robfig.EntryID{}}
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	s.crontab = set.Crontab
	if s.crontab == "" {
		s.crontab = filepath.Join(deps.DataDir, "crontab")
	}
	if err := os.MkdirAll(filepath.Dir(s.crontab), 0o755); err != nil {
		return nil, fmt.Errorf("--crontab %s: %w", s.crontab, err)
	}
	jobs, err := s.list()
	if err != nil {
		return nil, err
	}
	if err := s.writeCrontab(jobs); err != nil {
		return nil, err
	}
	if set.Runner {
		s.runner = robfig.New(robfig.WithParser(parser))
		for _, j := range jobs {
			s.schedule(j)
		}
		s.runner.Start()
	}
	return s, nil
}

// Close stops scheduling, kills runs in progress and waits for them.
func (s *Service) Close() error {
	s.stop()
	if s.runner != nil {
		<-s.runner.Stop().Done()
	}
	s.runs.Wait()
	return nil
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "cron",
		Title:   "deckhand cron service",
		Version: platform.Version,
		Description: "Scheduled jobs of the container and the service's self-description. " +
			"Every service answers GET /health with its health record (pid, fds, memory measured from /proc, " +
			"start time, bound ip, last user agent) and GET /openapi.json / /openapi.yaml with this document. " +
			"Jobs live in the service's store and in the crontab file (--crontab); the service runs them itself " +
			"unless --cron-runner=false. Query parameters follow one grammar on every service: booleans are " +
			"true, false, 1 or 0; a parameter that breaks its rule answers 400 INVALID naming it. " +
			"Errors are {\"code\",\"details\",\"message\"}.",
	}
}
