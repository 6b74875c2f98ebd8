// Package cron owns the container's cron service: it manages a crontab
// (the user's through the crontab command, /etc/crontab, or --crontab PATH)
// as the single source of truth for entries, keeping every line it does
// not touch byte for byte; with --cron-runner it also runs those entries
// itself (overlap and catch-up policies, run records kept in the service's
// store). A failed run is written to the journal and becomes a
// schedule.failed notification through the seams the agent wires.
package cron

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// Settings are the cron service's flags.
type Settings struct {
	// Crontab is the crontab file to manage. Empty: the user's crontab
	// through the crontab command when it exists, else /etc/crontab as
	// root, else <data>/cron/crontab.
	Crontab string
	// Format of Crontab: "user" (five fields, command), "system" (five
	// fields, user, command: /etc/crontab and /etc/cron.d) or "auto"
	// (system for /etc/crontab and files in /etc/cron.d).
	Format string
	// Runner runs the entries in the service itself (for containers with
	// no cron daemon). Off, a cron daemon is expected to read the crontab.
	Runner bool
}

// Flags declares --crontab, --crontab-format and --cron-runner.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Crontab, "crontab", "", "crontab file the cron service manages (default: the user's crontab through the crontab command; without it /etc/crontab as root, else <data>/cron/crontab)")
	fs.StringVar(&s.Format, "crontab-format", "auto", "format of --crontab: user, system (a user field after the schedule) or auto (system for /etc/crontab and /etc/cron.d/*)")
	fs.BoolVar(&s.Runner, "cron-runner", false, "run the crontab's entries in the cron service itself (for a container without a cron daemon)")
}

// Validate checks --crontab-format.
func (s *Settings) Validate() error {
	switch s.Format {
	case "", "auto", "user", "system":
		return nil
	}
	return fault.Invalid("--crontab-format", "must be auto, user or system, got %q", s.Format)
}

// Service is the cron service.
type Service struct {
	deps    contract.ServiceDeps
	set     Settings
	log     *slog.Logger
	backend backend
	system  bool

	mu sync.Mutex // read-modify-write of the crontab within this process

	healthMu  sync.Mutex
	lastErr   error // of the last access to the crontab
	lastCheck time.Time

	run *runner
}

// New builds the cron service: it picks the crontab, reads it once (a
// failure is reported by /health, not fatal: the crontab may become
// readable) and, with the runner on, starts scheduling its entries.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	deps, set, err := contract.PrepareService("cron", deps, set)
	if err != nil {
		return nil, err
	}
	if err := deps.Store.Declare(context.Background(), policyTable, runTable); err != nil {
		return nil, fmt.Errorf("cron: %w", err)
	}
	s := &Service{deps: deps, set: *set, log: deps.Logger}
	s.backend, s.system = pickBackend(*set, deps.DataDir)
	s.run = newRunner(s)
	if err := s.run.start(set.Runner); err != nil {
		return nil, err
	}
	return s, nil
}

// pickBackend resolves --crontab and --crontab-format.
func pickBackend(set Settings, dataDir string) (backend, bool) {
	path := set.Crontab
	if path == "" {
		if bin, err := exec.LookPath("crontab"); err == nil {
			return &commandBackend{bin: bin, dataDir: dataDir}, false
		}
		path = filepath.Join(dataDir, "crontab")
		if os.Geteuid() == 0 {
			path = "/etc/crontab"
		}
	}
	system := false
	switch set.Format {
	case "system":
		system = true
	case "", "auto":
		abs, _ := filepath.Abs(path)
		system = abs == "/etc/crontab" || filepath.Dir(abs) == "/etc/cron.d"
	}
	mode := os.FileMode(0o600)
	if system {
		mode = 0o644 // cron refuses group- or world-writable system crontabs
	}
	return &fileBackend{path: path, mode: mode}, system
}

// Close stops scheduling, kills runs in progress and waits for them.
func (s *Service) Close() error {
	s.run.close()
	return nil
}

// note remembers the outcome of an access to the crontab for /health.
func (s *Service) note(err error) {
	s.healthMu.Lock()
	s.lastErr, s.lastCheck = err, time.Now()
	s.healthMu.Unlock()
}

// HealthStatus is "unavailable" while the crontab cannot be read or
// written (the last access failed), with the reason; a fresh read is made
// when the last access is older than healthRecheck.
func (s *Service) HealthStatus() (string, string) {
	s.healthMu.Lock()
	stale := time.Since(s.lastCheck) > healthRecheck
	s.healthMu.Unlock()
	if stale {
		_, _ = s.readDoc(context.Background())
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.lastErr != nil {
		detail := s.lastErr.Error()
		if pe, ok := s.lastErr.(*fault.Error); ok {
			detail = pe.Details
		}
		return "unavailable", "crontab " + s.backend.where() + ": " + detail
	}
	return "ok", ""
}

const healthRecheck = 5 * time.Second

// readDoc reads and parses the crontab.
func (s *Service) readDoc(ctx context.Context) (*doc, error) {
	raw, err := s.backend.read(ctx)
	s.note(err)
	if err != nil {
		return nil, err
	}
	return parseCrontab(raw, s.system), nil
}

// modify is every write: under the process mutex and the backend's lock it
// reads the crontab, checks ifMatch against its ETag (412 for a stale one),
// applies fn and writes the result atomically. It answers the new crontab.
func (s *Service) modify(ctx context.Context, ifMatch string, fn func(d *doc) error) (*doc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.backend.lock()
	if err != nil {
		s.note(err)
		return nil, err
	}
	defer unlock()
	prev, err := s.backend.read(ctx)
	s.note(err)
	if err != nil {
		return nil, err
	}
	if err := checkIfMatch(ifMatch, etagOf(prev)); err != nil {
		return nil, err
	}
	d := parseCrontab(prev, s.system)
	if err := fn(d); err != nil {
		for i := len(d.undo) - 1; i >= 0; i-- {
			d.undo[i]()
		}
		return nil, err
	}
	next := d.render()
	if string(next) != string(prev) {
		if err := s.backend.write(ctx, prev, next); err != nil {
			for i := len(d.undo) - 1; i >= 0; i-- {
				d.undo[i]()
			}
			if pe, ok := err.(*fault.Error); ok && pe.Code == fault.CodeBackend {
				s.note(err)
			}
			return nil, err
		}
		s.note(nil)
	}
	nd := parseCrontab(next, s.system)
	s.run.load(nd, etagOf(next))
	return nd, nil
}

// checkIfMatch compares an If-Match header with the current ETag: absent
// passes, "*" passes, otherwise one listed tag must equal it exactly.
func checkIfMatch(header, current string) error {
	header = strings.TrimSpace(header)
	if header == "" || header == "*" {
		return nil
	}
	for _, t := range strings.Split(header, ",") {
		if strings.TrimSpace(t) == current {
			return nil
		}
	}
	return &fault.Error{Code: fault.CodePreconditionFailed, Details: "If-Match",
		Message: "the crontab changed since the ETag in If-Match was read (current ETag " + current + ")"}
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "cron",
		Title:   "deckhand cron service",
		Version: platform.Version,
		Description: "Manages the container's crontab and, with --cron-runner, runs its entries. " +
			"Every service answers GET /health with its health record (pid, fds, memory measured from /proc, " +
			"start time, bound ip, last user agent) and GET /openapi.json / /openapi.yaml with this document. " +
			"Which crontab: --crontab PATH; without it the user's crontab through the crontab command " +
			"(crontab -l / crontab -) when the command exists, else /etc/crontab as root (system format, with a " +
			"user field), else <data>/cron/crontab. --crontab-format user|system|auto (auto: system for " +
			"/etc/crontab and /etc/cron.d/*). The crontab is the only source of truth for entries: lines the " +
			"service does not change (comments, variables such as SHELL=, MAILTO=, CRON_TZ=, lines it does not " +
			"understand) are written back byte for byte. Writes are atomic (a temporary file renamed over the " +
			"crontab, the previous content kept as PATH.bak, or <data>/cron/crontab.bak with the crontab " +
			"command) and guarded by the crontab's ETag: every answer carries it, and a write with a stale " +
			"If-Match answers 412 PRECONDITION_FAILED, so of two racing writers exactly one wins. " +
			"Health: status is \"unavailable\" with a detail while the crontab cannot be read or written " +
			"(checked on every access and at least every 5 s by /health), \"ok\" otherwise. " +
			"A failure to read or write the crontab answers 500 {\"code\":\"BACKEND_ERROR\",\"details\":...," +
			"\"message\":\"Internal server error\"}; a schedule cron would refuse answers 400 INVALID_SCHEDULE " +
			"naming the field. Query parameters follow one grammar on every service: booleans are true, false, " +
			"1 or 0; a parameter that breaks its rule answers 400 INVALID naming it. " +
			"Errors are {\"code\",\"details\",\"message\"}.",
	}
}
