// Package process owns commands run on request: run one to its end and
// answer its output and exit (POST /api/v1/process/run), or start one in
// the background (POST /api/v1/process) and follow its output, resuming
// from any kept offset after a disconnect, over SSE or WebSocket; write to
// its standard input, resize its pseudo-terminal, signal its process group
// or stop its whole tree. Each process runs in a process group of its own
// (a session with a pty), killed with the agent; timeouts and DELETE stop
// the whole tree, keeping the output it wrote. Output is one ordered
// sequence of both streams with byte offsets, kept in memory and spilled to
// disk within per-process and total bounds (outlog.go). Records live in the
// service's store, so after a restart a process that was running says what
// happened to it; finished ones are removed after the retention period.
// Starts, ends, kills and signals go to the journal.
//
// One file per operation: run.go and start.go (launching, in
// launch_linux.go), control.go (stdin, resize, signal, kill), list.go,
// output.go and stream.go (reading and following output), routes.go (the
// HTTP layer, thin), store.go (records).
package process

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
	"deckhand/services/process/outlog"
)

// Settings are the process service's flags.
type Settings struct {
	MaxRunning        int
	MaxFinished       int
	Retention         time.Duration
	KillGrace         time.Duration
	OutputMemory      int64
	OutputMemoryTotal int64
	OutputDisk        int64
	OutputDiskTotal   int64
	ResumeGrace       time.Duration
}

// Flags declares --process-*.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.IntVar(&s.MaxRunning, "process-max-running", 128, "processes running at once at most (more answer 429)")
	fs.IntVar(&s.MaxFinished, "process-max-finished", 1000, "finished processes kept at most; the oldest go first")
	fs.DurationVar(&s.Retention, "process-retention", time.Hour, "keep a finished process's record and output this long")
	fs.DurationVar(&s.KillGrace, "process-kill-grace", defaultKillGrace, "wait between SIGTERM and SIGKILL when a timeout or DELETE stops a process tree")
	fs.Int64Var(&s.OutputMemory, "process-output-memory", 8<<20, "bytes of a process's newest output kept in memory; from half of it on, output is also written to disk")
	fs.Int64Var(&s.OutputMemoryTotal, "process-output-memory-total", 64<<20, "bytes of output kept in memory for all processes together")
	fs.Int64Var(&s.OutputDisk, "process-output-disk", 128<<20, "bytes of a process's output kept on disk; the oldest go first")
	fs.Int64Var(&s.OutputDiskTotal, "process-output-disk-total", 1<<30, "bytes of output kept on disk for all processes together; the oldest go first")
	fs.DurationVar(&s.ResumeGrace, "process-resume-grace", 30*time.Second, "after a follower disconnects, keep its place this long: output it has not read is not dropped meanwhile")
}

// outputLimits are the output log's bounds.
func (s *Settings) outputLimits() outlog.Limits {
	return outlog.Limits{Memory: s.OutputMemory, MemoryTotal: s.OutputMemoryTotal, Disk: s.OutputDisk,
		DiskTotal: s.OutputDiskTotal, ResumeGrace: s.ResumeGrace}
}

// Validate checks the bounds.
func (s *Settings) Validate() error {
	switch {
	case s.MaxRunning < 1:
		return fault.Invalid("--process-max-running", "must be at least 1")
	case s.MaxFinished < 0:
		return fault.Invalid("--process-max-finished", "must not be negative")
	case s.Retention < 0:
		return fault.Invalid("--process-retention", "must not be negative")
	case s.KillGrace < 0:
		return fault.Invalid("--process-kill-grace", "must not be negative")
	case s.OutputMemory < 64<<10:
		return fault.Invalid("--process-output-memory", "must be at least 65536")
	case s.OutputMemoryTotal < s.OutputMemory:
		return fault.Invalid("--process-output-memory-total", "must be at least --process-output-memory")
	case s.OutputDisk < 1<<20:
		return fault.Invalid("--process-output-disk", "must be at least 1048576")
	case s.OutputDiskTotal < s.OutputDisk:
		return fault.Invalid("--process-output-disk-total", "must be at least --process-output-disk")
	case s.ResumeGrace < 0:
		return fault.Invalid("--process-resume-grace", "must not be negative")
	}
	return nil
}

// Defaults are the flags' defaults (for callers that build the service
// without flags, such as tests).
func Defaults() *Settings {
	s := &Settings{}
	fs := pflag.NewFlagSet("process", pflag.ContinueOnError)
	s.Flags(fs)
	return s
}

// Service is the process service.
type Service struct {
	deps    contract.ServiceDeps
	set     *Settings
	log     *slog.Logger
	spawner *proc.Spawner
	budget  *outlog.Budget
	outDir  string
	store   *recorder

	mu      sync.Mutex
	procs   map[string]*process
	tokens  map[string]*process
	running int // running or starting
	// lastEnded is when the last process ended (Activity).
	lastEnded time.Time
	closed    bool
	// finished holds the finished processes in the order they ended, for
	// --process-max-finished to drop the oldest without sorting them all
	// at each end; entries unregistered since are skipped when reached.
	finished  []*process
	nFinished int // registered entries of finished

	ctx    context.Context // cancelled by Close: running processes are stopped
	cancel context.CancelFunc
	wg     sync.WaitGroup // process supervisors and the janitor
}

// New opens the records, settles those a previous run left running (their
// processes died with it), and starts the retention janitor.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = Defaults()
	}
	deps, set, err := contract.PrepareService("process", deps, set)
	if err != nil {
		return nil, err
	}
	s := &Service{deps: deps, set: set, log: deps.Logger, spawner: proc.NewSpawner(),
		procs: map[string]*process{}, tokens: map[string]*process{}, outDir: filepath.Join(deps.DataDir, "output")}
	s.budget = outlog.NewBudget(set.outputLimits(), deps.Logger)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Output of a previous run is not kept across restarts.
	if err = os.RemoveAll(s.outDir); err == nil {
		err = os.MkdirAll(s.outDir, 0o700)
	}
	if err != nil {
		s.spawner.Close()
		return nil, err
	}
	s.store = newRecorder(deps.Store, deps.Logger)
	if err := s.restore(); err != nil {
		s.store.close()
		s.spawner.Close()
		return nil, err
	}
	s.wg.Go(s.janitor)
	return s, nil
}

// Close stops every running process (TERM to its tree, KILL after the
// kill grace; recorded agent_stopped), waits for them, and writes the
// records.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := slices.Collect(maps.Values(s.procs))
	s.mu.Unlock()
	for _, p := range all {
		p.log.AbortAll()
	}
	s.cancel()
	s.wg.Wait()
	for _, p := range all {
		p.log.AbortAll() // and the spillers of those that ended meanwhile
	}
	s.budget.Wait()
	s.spawner.Close()
	s.store.close()
	return nil
}

// journal writes one of the service's entries.
func (s *Service) journal(level, msg string, fields map[string]any) {
	s.deps.Journal.Record(contract.JournalEntry{Time: s.deps.Clock.Now(), Source: "process", Level: level,
		Message: msg, Fields: fields})
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "process",
		Title:   "deckhand processes",
		Version: platform.Version,
		Description: "Runs commands on request: to their end (POST /api/v1/process/run answers output and exit), or in the " +
			"background (POST /api/v1/process answers the record at once) with their output followed, from any kept byte " +
			"offset, over Server-Sent Events or a WebSocket. Every service answers GET /health and GET /openapi.json / " +
			"/openapi.yaml. A process runs argv (cmd, looked up in PATH) or a shell line (/bin/sh -c), in cwd, with env added " +
			"to the agent's environment (DECKHAND_* removed, DECKHAND_PROCESS_ID set), as user (the agent must be root to " +
			"switch), in a process group of its own (with a pty: a session, the pty its controlling terminal), SIGKILLed if " +
			"the agent dies. When its main process exits, what is left of its group is killed (as the daemon and exec " +
			"services do); a program meant to outlive it starts its own session (setsid) or belongs to the daemon service. " +
			"States: running, exited (on its own, exit_code set), killed (a signal ended it: one sent to it, DELETE, or the " +
			"agent stopping; exit_code 128+N and signal), timed_out (timeout_ms passed), failed_to_start (the program could " +
			"not be executed; error is the OS's reason). end_reason is finer: exit, signal, killed, timeout, failed_to_start, " +
			"agent_stopped, agent_restarted (the record said running when the service started: the process died with the " +
			"agent; anything of it still alive is killed then). Timeouts and DELETE send SIGTERM to the group and every " +
			"descendant, SIGKILL after the kill grace (--process-kill-grace, 5 s), and keep the output written so far. " +
			"Output is one sequence of both streams in the order read, each byte with an offset: the newest " +
			"--process-output-memory bytes (8 MiB) per process in memory; from half of that on, a goroutine writes them to " +
			"files under <data>/process/output, at the disk's pace, up to --process-output-disk (128 MiB) per process; at " +
			"most --process-output-memory-total (64 MiB) in memory and --process-output-disk-total (1 GiB) on disk for all " +
			"processes. Beyond the bounds the oldest bytes go, and a reader asking for them gets a gap; output faster than the " +
			"disk that no follower needs is kept in memory only; the newest chunk always stays. A follower keeps its place: " +
			"while one is connected, and for --process-resume-grace (30 s) after it disconnects, bytes it has not read (nor " +
			"those a quarter of the disk bound before its place, which a dropped connection may have lost in flight) leave " +
			"memory only for the disk, and the process is not let more than half the disk bound ahead of it (its writes wait, " +
			"as on a pipe), so resuming loses nothing; start with hold_output to have that from the first byte. " +
			"Finished processes are kept --process-retention (1 h), at most " +
			"--process-max-finished (1000), then removed with their output; output does not survive a restart, records do. " +
			"At most --process-max-running (128) run at once: more answer 429. Errors are {\"code\",\"details\",\"message\"}; " +
			"a bad field is 400 INVALID naming it.",
	}
}
