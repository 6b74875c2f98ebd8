package process

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
	"deckhand/services/process/outlog"
)

// States of a process.
const (
	StateRunning       = "running"
	StateExited        = "exited"          // ended on its own with an exit code
	StateKilled        = "killed"          // ended by a signal: one sent to it, DELETE, or the agent stopping
	StateTimedOut      = "timed_out"       // timeout_ms passed; the tree was stopped
	StateFailedToStart = "failed_to_start" // the program could not be executed
)

// End reasons: why a process is no longer running, finer than its state.
const (
	EndExit           = "exit"            // it exited (state exited)
	EndSignal         = "signal"          // a signal ended it (state killed)
	EndKilled         = "killed"          // DELETE stopped it (state killed)
	EndTimeout        = "timeout"         // timeout_ms (state timed_out)
	EndFailedToStart  = "failed_to_start" // execve or its set-up failed (state failed_to_start)
	EndAgentStopped   = "agent_stopped"   // the service stopped and took it down (state killed)
	EndAgentRestarted = "agent_restarted" // found running in the record after a restart: it died with the agent (state killed)
)

// Limits of inputs.
const (
	maxPTYSize        = 1000
	maxTimeoutMS      = 30 * 24 * 3600 * 1000 // 30 days
	maxTagLen         = 128
	maxTokenLen       = 128
	defaultMaxOutput  = 1 << 20
	maxMaxOutput      = 16 << 20
	defaultKillGrace  = 5 * time.Second
	maxGraceMS        = 10 * 60 * 1000
	encodingBase64    = "base64"
	encodingUTF8      = "utf-8"
	shellPath         = "/bin/sh"
	idEnv             = "DECKHAND_PROCESS_ID"
	defaultTermEnvVar = "xterm-256color"
)

// PTYSize is a pseudo-terminal's size.
type PTYSize struct {
	Rows int `json:"rows" required:"true" doc:"1-1000"`
	Cols int `json:"cols" required:"true" doc:"1-1000"`
}

func (p *PTYSize) validate(field string) error {
	if p.Rows < 1 || p.Rows > maxPTYSize {
		return fault.Invalid(field+".rows", "must be between 1 and %d", maxPTYSize)
	}
	if p.Cols < 1 || p.Cols > maxPTYSize {
		return fault.Invalid(field+".cols", "must be between 1 and %d", maxPTYSize)
	}
	return nil
}

// Spec is what to run: the fields run and start share.
type Spec struct {
	Cmd   []string          `json:"cmd,omitempty" doc:"argv: the program (looked up in the PATH of env when it has no slash) and its arguments; exactly one of cmd and shell"`
	Shell string            `json:"shell,omitempty" doc:"a command line, run by /bin/sh -c"`
	Cwd   string            `json:"cwd,omitempty" doc:"absolute working directory; default the user's home, else /"`
	Env   map[string]string `json:"env,omitempty" doc:"variables added to the agent's environment (DECKHAND_* variables are never passed on; DECKHAND_PROCESS_ID is set to the process's id)"`
	User  string            `json:"user,omitempty" doc:"run as this user (name or uid; the agent must run as root to switch); default the agent's --run-as user, else its own"`
	// TimeoutMS stops the whole tree when it passes.
	TimeoutMS int64  `json:"timeout_ms,omitempty" doc:"stop the whole process tree after this many milliseconds (SIGTERM, SIGKILL after the kill grace); 0 or absent: no limit"`
	Stdin     string `json:"stdin,omitempty" doc:"bytes written to standard input first (with stdin_encoding base64: their base64)"`
	// StdinEncoding says how Stdin is written.
	StdinEncoding string   `json:"stdin_encoding,omitempty" enum:"utf-8,base64" doc:"utf-8 (default) or base64"`
	Tag           string   `json:"tag,omitempty" doc:"a label to list processes by (at most 128 characters)"`
	ClientToken   string   `json:"client_token,omitempty" doc:"idempotency key (at most 128 characters): a second start or run with the same token answers the first process instead of starting another, as long as that process is kept; the same token with a different request is 409 CONFLICT"`
	PTY           *PTYSize `json:"pty,omitempty" doc:"run on a pseudo-terminal of this size: stdout and stderr are then one stream, stdout"`

	stdin []byte // Stdin decoded by Validate
}

// Validate checks the fields that need no look-up on the system; the user
// and cwd are checked when the process starts.
func (s *Spec) Validate() error {
	switch {
	case len(s.Cmd) == 0 && s.Shell == "":
		return fault.Invalid("cmd", "one of cmd (an argv array) and shell (a command line) is required")
	case len(s.Cmd) > 0 && s.Shell != "":
		return fault.Invalid("shell", "give cmd or shell, not both")
	case len(s.Cmd) > 0 && s.Cmd[0] == "":
		return fault.Invalid("cmd", "cmd[0] must name a program")
	case strings.ContainsRune(s.Shell, 0):
		return fault.Invalid("shell", "must not contain NUL")
	}
	for i, a := range s.Cmd {
		if strings.ContainsRune(a, 0) {
			return fault.Invalid("cmd", "cmd[%d] must not contain NUL", i)
		}
	}
	if s.Cwd != "" && (!filepath.IsAbs(s.Cwd) || strings.ContainsRune(s.Cwd, 0)) {
		return fault.Invalid("cwd", "must be an absolute path, got %q", s.Cwd)
	}
	if k, ok := proc.CheckEnv(s.Env); !ok {
		return fault.Invalid("env", "variable %q: names must be non-empty without '=' or NUL, values without NUL", k)
	}
	if strings.ContainsRune(s.User, 0) {
		return fault.Invalid("user", "must not contain NUL")
	}
	if s.TimeoutMS < 0 || s.TimeoutMS > maxTimeoutMS {
		return fault.Invalid("timeout_ms", "must be between 0 (no limit) and %d", int64(maxTimeoutMS))
	}
	var err error
	if s.stdin, err = decode("stdin", s.Stdin, "stdin_encoding", s.StdinEncoding); err != nil {
		return err
	}
	if err := checkLabel("tag", s.Tag, maxTagLen); err != nil {
		return err
	}
	if err := checkLabel("client_token", s.ClientToken, maxTokenLen); err != nil {
		return err
	}
	if s.PTY != nil {
		return s.PTY.validate("pty")
	}
	return nil
}

func checkLabel(field, v string, max int) error {
	if len(v) > max {
		return fault.Invalid(field, "must be at most %d characters", max)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fault.Invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// argv is what runs: cmd, or /bin/sh -c shell.
func (s *Spec) argv() []string {
	if s.Shell != "" {
		return []string{shellPath, "-c", s.Shell}
	}
	return s.Cmd
}

// RunInput is the body of POST /api/v1/process/run.
type RunInput struct {
	Spec
	MaxOutputBytes int `json:"max_output_bytes,omitempty" doc:"keep at most this many bytes of each of stdout and stderr in the answer, the first ones (default 1 MiB, or 4 × max_chars with max_chars; at most 16 MiB); the whole output stays readable at /api/v1/process/{id}/output while it is kept"`
	MaxChars       int `json:"max_chars,omitempty" doc:"besides max_output_bytes, keep at most this many characters of each of stdout and stderr (of their base64 when the output is binary)"`
}

// Validate checks the spec and the output limit.
func (in *RunInput) Validate() error {
	if err := in.Spec.Validate(); err != nil {
		return err
	}
	if in.MaxOutputBytes < 0 || in.MaxOutputBytes > maxMaxOutput {
		return fault.Invalid("max_output_bytes", "must be between 1 and %d (0 or absent: %d)", maxMaxOutput, defaultMaxOutput)
	}
	if in.MaxChars < 0 || in.MaxChars > maxMaxOutput {
		return fault.Invalid("max_chars", "must be between 1 and %d (0 or absent: no bound)", maxMaxOutput)
	}
	switch {
	case in.MaxOutputBytes == 0 && in.MaxChars > 0:
		// A character is at most 4 bytes.
		in.MaxOutputBytes = min(4*in.MaxChars, maxMaxOutput)
	case in.MaxOutputBytes == 0:
		in.MaxOutputBytes = defaultMaxOutput
	}
	return nil
}

// StartInput is the body of POST /api/v1/process.
type StartInput struct {
	Spec
	KeepStdinOpen bool `json:"keep_stdin_open,omitempty" doc:"keep standard input open (after stdin, if given) for POST .../stdin; default it is closed once stdin is written, so a program reading it sees end of file. A pty's input is always open"`
	// HoldOutput keeps a follower's place at offset 0 from the start.
	HoldOutput bool `json:"hold_output,omitempty" doc:"hold the output from its first byte for a follower that has yet to attach, as if one had attached and dropped at once: for --process-resume-grace nothing is dropped and the process waits once it is half the disk bound ahead. For a client that starts and then follows (deckhand exec): without it, a process writing faster than the disk takes loses what memory cannot hold before the follower attaches"`
}

// Validate checks the spec.
func (in *StartInput) Validate() error { return in.Spec.Validate() }

// Process is a process's record.
type Process struct {
	ID          string     `json:"id" required:"true"`
	Tag         string     `json:"tag,omitempty"`
	ClientToken string     `json:"client_token,omitempty"`
	Cmd         []string   `json:"cmd" required:"true" doc:"the argv that ran (/bin/sh -c LINE for shell)"`
	Cwd         string     `json:"cwd" required:"true"`
	User        string     `json:"user,omitempty"`
	PTY         *PTYSize   `json:"pty,omitempty" doc:"the pseudo-terminal's current size; absent: pipes"`
	PID         int        `json:"pid,omitempty" doc:"the leader of the process's own process group (session, with a pty)"`
	State       string     `json:"state" required:"true" enum:"running,exited,killed,timed_out,failed_to_start"`
	EndReason   string     `json:"end_reason,omitempty" enum:"exit,signal,killed,timeout,failed_to_start,agent_stopped,agent_restarted" doc:"why it is no longer running"`
	ExitCode    *int       `json:"exit_code" doc:"null while running and when it failed to start; 128+N when signal N ended it"`
	Signal      string     `json:"signal,omitempty" doc:"the signal that ended it (TERM, KILL ...)"`
	Error       string     `json:"error,omitempty" doc:"why it failed to start (the OS's reason), or what happened to it"`
	StartedAt   time.Time  `json:"started_at" required:"true"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	DurationMS  int64      `json:"duration_ms" required:"true" doc:"so far while running"`
	TimeoutMS   int64      `json:"timeout_ms,omitempty"`
	StdoutBytes int64      `json:"stdout_bytes" required:"true"`
	StderrBytes int64      `json:"stderr_bytes" required:"true"`
	OutputBytes int64      `json:"output_bytes" required:"true" doc:"all output so far: the offset the next byte will have"`
	// OutputKeptFrom is the oldest offset still readable.
	OutputKeptFrom int64 `json:"output_kept_from" required:"true" doc:"the oldest output offset still kept; bytes before it were dropped by the bounds"`
	OutputComplete bool  `json:"output_complete" required:"true" doc:"the process has ended and all its output has been read"`
	StdinOpen      bool  `json:"stdin_open" required:"true"`
}

// ended reports whether the record is final.
func (p Process) ended() bool { return p.State != StateRunning }

// stateOf is the state an end reason puts a process in.
func stateOf(reason string) string {
	switch reason {
	case EndExit:
		return StateExited
	case EndTimeout:
		return StateTimedOut
	case EndFailedToStart:
		return StateFailedToStart
	}
	return StateKilled
}

// RunResult answers POST /api/v1/process/run.
type RunResult struct {
	ID         string `json:"id" required:"true" doc:"the process's id: its record and whole output stay readable while kept"`
	Stdout     string `json:"stdout" required:"true"`
	Stderr     string `json:"stderr" required:"true"`
	Encoding   string `json:"encoding,omitempty" enum:"base64" doc:"base64 when stdout and stderr are given as base64 (their bytes are not UTF-8 text)"`
	ExitCode   *int   `json:"exit_code" doc:"null when it failed to start; 128+N when signal N ended it"`
	Signal     string `json:"signal,omitempty"`
	State      string `json:"state" required:"true" enum:"exited,killed,timed_out,failed_to_start"`
	EndReason  string `json:"end_reason" required:"true" enum:"exit,signal,killed,timeout,failed_to_start,agent_stopped"`
	Error      string `json:"error,omitempty" doc:"why it failed to start"`
	DurationMS int64  `json:"duration_ms" required:"true"`
	Truncated  bool   `json:"truncated" required:"true" doc:"stdout or stderr holds only the first max_output_bytes (or max_chars) of what was written"`
}

// StartResult is the record a start answers; Created is false when a
// client_token named an existing process.
type StartResult struct {
	Process
	Created bool `json:"-"`
}

// IDInput names a process (path parameter id).
type IDInput struct {
	ID string `json:"-" path:"id" doc:"the process's id"`
}

// ListInput filters GET /api/v1/process.
type ListInput struct {
	Tag   string `json:"-" query:"tag" doc:"only processes with this tag"`
	State string `json:"-" query:"state" enum:"running,exited,killed,timed_out,failed_to_start" doc:"only processes in this state"`
}

// ProcessList answers GET /api/v1/process.
type ProcessList struct {
	Processes []Process `json:"processes" required:"true" doc:"oldest first"`
}

// StdinInput is POST .../stdin: the raw body, or JSON {"data","encoding"}.
type StdinInput struct {
	ID       string `json:"-" path:"id"`
	Data     string `json:"data" doc:"the bytes (with encoding base64: their base64)"`
	Encoding string `json:"encoding,omitempty" enum:"utf-8,base64"`

	bytes []byte
}

// Validate decodes Data.
func (in *StdinInput) Validate() error {
	var err error
	in.bytes, err = decode("data", in.Data, "encoding", in.Encoding)
	return err
}

// decode is the bytes of field's value v as encField says (enc: utf-8 or
// base64).
func decode(field, v, encField, enc string) ([]byte, error) {
	switch enc {
	case "", encodingUTF8:
		return []byte(v), nil
	case encodingBase64:
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fault.Invalid(field, "is not valid base64 (%s is base64)", encField)
		}
		return b, nil
	}
	return nil, fault.Invalid(encField, "must be utf-8 or base64, got %q", enc)
}

// StdinResult answers POST .../stdin.
type StdinResult struct {
	Written int `json:"written" required:"true"`
}

// ResizeInput is POST .../resize.
type ResizeInput struct {
	ID string `json:"-" path:"id"`
	PTYSize
}

// Validate checks the size.
func (in *ResizeInput) Validate() error { return in.PTYSize.validate("size") }

// SignalValue is a signal by name (TERM, SIGTERM, term) or number (15).
type SignalValue string

// UnmarshalJSON takes a string or a number.
func (v *SignalValue) UnmarshalJSON(b []byte) error {
	var n json.Number
	if json.Unmarshal(b, &n) == nil {
		*v = SignalValue(n)
		return nil
	}
	s := string(b) // kept when not a string either: Validate names the field
	_ = json.Unmarshal(b, &s)
	*v = SignalValue(s)
	return nil
}

// JSONSchema states the two forms.
func (SignalValue) JSONSchema() map[string]any {
	return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}},
		"description": "a name as kill(1) takes it (TERM, SIGTERM, hup) or a number 1-64"}
}

// SignalInput is POST .../signal.
type SignalInput struct {
	ID     string      `json:"-" path:"id"`
	Signal SignalValue `json:"signal" required:"true"`

	sig int
}

// Validate parses the signal.
func (in *SignalInput) Validate() error {
	sig, err := proc.ParseSignal(string(in.Signal))
	if err != nil {
		return fault.Invalid("signal", "%s", err.Error())
	}
	in.sig = int(sig)
	return nil
}

// KillInput is DELETE /api/v1/process/{id}.
type KillInput struct {
	ID      string `json:"-" path:"id" doc:"the process's id"`
	GraceMS int64  `json:"-" query:"grace_ms" minimum:"0" maximum:"600000" doc:"milliseconds between SIGTERM and SIGKILL (0 or absent: --process-kill-grace)"`
}

// Validate checks the grace.
func (in *KillInput) Validate() error {
	if in.GraceMS < 0 || in.GraceMS > maxGraceMS {
		return fault.Invalid("grace_ms", "must be between 0 and %d", maxGraceMS)
	}
	return nil
}

// OutputInput is GET .../output without follow.
type OutputInput struct {
	ID       string `json:"-" path:"id"`
	Since    int64  `json:"-" query:"since"`
	MaxBytes int64  `json:"-" query:"max_bytes"`
}

// Chunk is a piece of output: its stream, the offset of its first byte
// in the process's output (both streams, in the order they were read)
// and its bytes.
type Chunk struct {
	Type     string `json:"type" required:"true" enum:"output"`
	Stream   string `json:"stream" required:"true" enum:"stdout,stderr"`
	Offset   int64  `json:"offset" required:"true"`
	Data     string `json:"data" required:"true" doc:"UTF-8 text, or base64 when encoding is base64"`
	Encoding string `json:"encoding,omitempty" enum:"base64"`

	end int64 // offset after its last byte
}

// Gap says output bytes [from, to) were no longer kept when asked for.
type Gap struct {
	Type string `json:"type" required:"true" enum:"gap"`
	From int64  `json:"from" required:"true"`
	To   int64  `json:"to" required:"true"`
}

// gapOf is the log's gap as a client reads it (nil: none).
func gapOf(g *outlog.Gap) *Gap {
	if g == nil {
		return nil
	}
	return &Gap{Type: "gap", From: g.From, To: g.To}
}

// End is the last message of a stream: how the process ended.
type End struct {
	Type    string  `json:"type" required:"true" enum:"end"`
	Process Process `json:"process" required:"true"`
}

// OutputPage answers GET .../output without follow.
type OutputPage struct {
	Chunks     []Chunk `json:"chunks" required:"true"`
	Gap        *Gap    `json:"gap,omitempty" doc:"bytes from since up to the oldest kept one were dropped"`
	NextOffset int64   `json:"next_offset" required:"true" doc:"pass as since to read on"`
	Done       bool    `json:"done" required:"true" doc:"the process has ended and next_offset is the end of its output"`
	Process    Process `json:"process" required:"true"`
}

// ms is d in whole milliseconds.
func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

// formatArgv is a readable one-line form of argv for the journal.
func formatArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") {
			parts[i] = strconv.Quote(a)
		} else {
			parts[i] = a
		}
	}
	s := strings.Join(parts, " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
