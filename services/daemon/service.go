// Package daemon owns the container's program daemon (supervisord-like):
// programs declared one JSON file each under <data>/daemon/programs and
// through the API, each run in its own process group with a restart
// policy, capped exponential backoff for failed starts, a stop signal and
// timeout, dependencies (depends_on, waiting for readiness probes) and a
// live status. Their stdout and stderr lines go to the journal; failures
// go to the notifier as program.crashed.
package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// Settings are the daemon service's flags.
type Settings struct {
	// Programs is the directory of program files; empty: <data>/daemon/programs.
	Programs string
}

// Flags declares --daemon-programs.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Programs, "daemon-programs", "", "directory of program definitions, one <id>.json each (default <data>/daemon/programs)")
}

// Validate checks --daemon-programs.
func (s *Settings) Validate() error {
	if s.Programs != "" && !filepath.IsAbs(s.Programs) {
		return fault.Invalid("--daemon-programs", "must be an absolute path, got %q", s.Programs)
	}
	return nil
}

// Service is the program daemon.
type Service struct {
	deps    contract.ServiceDeps
	dir     string
	log     *slog.Logger
	spawner *proc.Spawner

	reloadMu sync.Mutex // one reload at a time
	mu       sync.Mutex // definitions and their files
	programs map[string]*program
	problems []string // files that did not load

	chMu sync.Mutex
	ch   chan struct{} // closed and replaced on every state change

	wg     sync.WaitGroup
	closed bool
}

// New loads the program files and starts those with autostart.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = &Settings{}
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	if deps.DataDir == "" {
		return nil, errors.New("daemon: no data directory")
	}
	deps = deps.WithDefaults()
	dir := cmp.Or(set.Programs, filepath.Join(deps.DataDir, "programs"))
	defs, problems, err := loadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--daemon-programs %s: %w", dir, err)
	}
	s := &Service{deps: deps, dir: dir, log: deps.Logger, spawner: proc.NewSpawner(),
		programs: map[string]*program{}, ch: make(chan struct{})}
	for _, pr := range problems {
		s.problems = append(s.problems, pr.String())
		s.log.Error("daemon: program file skipped", "problem", pr.String())
		s.journal("daemon", "error", "program file skipped: "+pr.String(), nil)
	}
	for id, def := range defs {
		s.programs[id] = newProgram(s, def)
	}
	for _, id := range s.ids() {
		if p := s.programs[id]; *p.def.Autostart {
			p.start()
		}
	}
	return s, nil
}

// Close stops every program (each with its stop signal and timeout, all
// at once) and waits for them.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	progs := slices.Collect(maps.Values(s.programs))
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range progs {
		wg.Go(p.halt)
	}
	wg.Wait()
	s.wg.Wait()
	s.spawner.Close()
	return nil
}

// changes is a channel closed at the next state change of any program.
func (s *Service) changes() <-chan struct{} {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	return s.ch
}

func (s *Service) changed() {
	s.chMu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.chMu.Unlock()
}

func (s *Service) program(id string) *program {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.programs[id]
}

// ids are the program ids in order; the caller holds s.mu or is New.
func (s *Service) ids() []string {
	return slices.Sorted(maps.Keys(s.programs))
}

// journal writes one of the daemon's own entries (starts, exits, stops).
func (s *Service) journal(program, level, msg string, fields map[string]any) {
	f := map[string]any{"program": program}
	for k, v := range fields {
		f[k] = v
	}
	s.deps.Journal.Record(contract.JournalEntry{Time: s.deps.Clock.Now(), Source: "daemon", Level: level,
		Message: program + ": " + msg, Fields: f})
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "daemon",
		Title:   "deckhand program daemon",
		Version: platform.Version,
		Description: "Runs and supervises the container's own programs, as supervisord does. Every service answers GET /health " +
			"and GET /openapi.json / /openapi.yaml. Programs are declared one JSON file each, <id>.json under --daemon-programs " +
			"(default <data>/daemon/programs; the body of PUT /api/v1/daemon/programs/{id} is the same JSON, and PUT writes the " +
			"file atomically), read when the service starts and by POST /api/v1/daemon/reload (all or nothing). At start a file that does not parse, or depends on a missing program or " +
			"on a cycle, is skipped, logged, written to the journal and listed in skipped_files of GET /api/v1/daemon/programs. A program runs its command (no shell) with " +
			"args, cwd, env added to the agent's environment less its DECKHAND_* settings, as user (the agent must be root to switch), in a process group " +
			"of its own, killed when the agent dies. States: stopped, starting (waiting for depends_on, or launched and not yet " +
			"started), running (up start_seconds, or its readiness probe passed), backoff (a start failed; the delay doubles " +
			"from backoff.initial up to backoff.max), exited (ended, not restarted by its policy), fatal (start_retries failed " +
			"starts in a row, or a dependency is fatal). A failed start is an exit with a failure (or any exit under restart " +
			"always) before the run counted as started, or a readiness probe that timed out. A run that had started and ends is " +
			"restarted at once when its policy says so (always; on-failure after a non-zero exit or a signal). When a " +
			"program's main process exits, whatever is left of its process group is killed with SIGKILL (systemd's " +
			"control-group mode), so a restart never meets an old grandchild. Stop sends stop_signal to the process group and " +
			"to every descendant, waits stop_timeout, then SIGKILLs them all. Each line of stdout and stderr is a journal entry " +
			"with the program's id as source and fields stream (stdout or stderr) and pid; starts, exits and stops are entries " +
			"of source daemon. Failed runs and fatal programs are program.crashed events. Enable and disable set autostart " +
			"(as systemctl enable/disable; neither starts nor stops). Zombies: the service waits for its own children; as " +
			"PID 1 the agent reaps orphans in a separate init process. Errors are {\"code\",\"details\",\"message\"}: an invalid " +
			"definition is 400 INVALID naming the field (a dependency cycle names the cycle: a → b → a) and nothing changes.",
	}
}
