package daemon

import (
	"cmp"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/proc"
)

// Restart policies.
const (
	RestartAlways    = "always"     // restart after every exit
	RestartOnFailure = "on-failure" // restart after a non-zero exit or a signal
	RestartNever     = "never"      // never restart
)

// Program is one program's definition: the body of PUT
// /api/v1/daemon/programs/{id} and the content of <programs>/<id>.json.
type Program struct {
	ID        string            `json:"id,omitempty" doc:"the program's id (from the path; in a body it must equal it)"`
	Command   string            `json:"command" required:"true" doc:"executable: a path, or a name looked up in PATH (no shell; use command \"/bin/sh\" and args [\"-c\", ...] for one)"`
	Args      []string          `json:"args,omitempty"`
	Cwd       string            `json:"cwd,omitempty" doc:"working directory, absolute (default: the user's home, else /)"`
	Env       map[string]string `json:"env,omitempty" doc:"added to the agent's environment less its own settings (DECKHAND_* are never passed on)"`
	User      string            `json:"user,omitempty" doc:"run as this user (the agent must be root to switch); default the agent's --run-as user, else its own"`
	Autostart *bool             `json:"autostart,omitempty" doc:"start when the daemon service starts and when created (default true); enable and disable set it"`
	Restart   string            `json:"restart,omitempty" enum:"always,on-failure,never" doc:"default on-failure"`
	// StartSeconds and StartRetries are supervisord's startsecs and
	// startretries: an exit sooner than StartSeconds after the start (or
	// before the readiness probe passed) is a failed start; after
	// StartRetries failed starts in a row the program is fatal.
	StartSeconds float64  `json:"start_seconds,omitempty" doc:"a run must stay up this long (and pass its readiness probe) to count as started; default 1, 0 to 3600"`
	StartRetries *int     `json:"start_retries,omitempty" doc:"failed starts in a row before fatal; default 3, 0 to 100"`
	Backoff      *Backoff `json:"backoff,omitempty"`
	StopSignal   string   `json:"stop_signal,omitempty" doc:"sent to the process group on stop: a name (TERM, INT, HUP, ...) or number; default TERM"`
	StopTimeout  float64  `json:"stop_timeout,omitempty" doc:"seconds to wait after stop_signal before SIGKILL to the whole group; default 10, up to 3600"`
	DependsOn    []string `json:"depends_on,omitempty" doc:"programs that must be running (ready), or have exited 0, before this one starts; starting this starts them"`
	Readiness    *Probe   `json:"readiness,omitempty"`
}

// Backoff is the delay between failed starts: Initial, doubling up to Max.
type Backoff struct {
	Initial float64 `json:"initial,omitempty" doc:"seconds before the first restart after a failed start; default 0.1"`
	Max     float64 `json:"max,omitempty" doc:"cap in seconds; default 10"`
}

// Probe says when a started program is ready: exactly one of tcp, http or
// command.
type Probe struct {
	TCP      string   `json:"tcp,omitempty" doc:"host:port that accepts a connection"`
	HTTP     string   `json:"http,omitempty" doc:"http(s) URL answering 2xx or 3xx"`
	Command  []string `json:"command,omitempty" doc:"argv that exits 0"`
	Interval float64  `json:"interval,omitempty" doc:"seconds between attempts; default 0.2"`
	Timeout  float64  `json:"timeout,omitempty" doc:"seconds to become ready before the start counts as failed; default 60"`
}

var idRule = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// checkID names the rule an id breaks.
func checkID(field, id string) error {
	if !idRule.MatchString(id) {
		return fault.Invalid(field, "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit, got %q", id)
	}
	return nil
}

// Validate checks every field and fills the defaults. The id comes from
// the path or the file name: an empty one is left for the caller to set
// (and validate again), as a PUT body leaves it out.
func (p *Program) Validate() error {
	if p.ID != "" {
		if err := checkID("id", p.ID); err != nil {
			return err
		}
	}
	if strings.TrimSpace(p.Command) == "" {
		return fault.Invalid("command", "required")
	}
	for _, s := range append([]string{p.Command, p.Cwd, p.User}, p.Args...) {
		if strings.ContainsRune(s, 0) {
			return fault.Invalid(fieldOf(p, s), "must not contain NUL")
		}
	}
	if p.Cwd != "" && !strings.HasPrefix(p.Cwd, "/") {
		return fault.Invalid("cwd", "must be an absolute path, got %q", p.Cwd)
	}
	if k, ok := proc.CheckEnv(p.Env); !ok {
		return fault.Invalid("env", "variable %q: names must be non-empty without '=' and NUL; values without NUL", k)
	}
	if p.Autostart == nil {
		t := true
		p.Autostart = &t
	}
	switch p.Restart {
	case "":
		p.Restart = RestartOnFailure
	case RestartAlways, RestartOnFailure, RestartNever:
	default:
		return fault.Invalid("restart", "must be always, on-failure or never, got %q", p.Restart)
	}
	if err := seconds("start_seconds", &p.StartSeconds, 1, 3600); err != nil {
		return err
	}
	if p.StartRetries == nil {
		n := 3
		p.StartRetries = &n
	} else if *p.StartRetries < 0 || *p.StartRetries > 100 {
		return fault.Invalid("start_retries", "must be 0 to 100, got %d", *p.StartRetries)
	}
	if p.Backoff == nil {
		p.Backoff = &Backoff{}
	}
	if err := seconds("backoff.initial", &p.Backoff.Initial, 0.1, 3600); err != nil {
		return err
	}
	if err := seconds("backoff.max", &p.Backoff.Max, 10, 86400); err != nil {
		return err
	}
	if p.Backoff.Max < p.Backoff.Initial {
		return fault.Invalid("backoff.max", "must be at least backoff.initial (%g)", p.Backoff.Initial)
	}
	p.StopSignal = cmp.Or(p.StopSignal, "TERM")
	sig, err := proc.ParseSignal(p.StopSignal)
	if err != nil {
		return fault.Invalid("stop_signal", "%s", err.Error())
	}
	p.StopSignal = proc.SignalName(sig)
	if err := seconds("stop_timeout", &p.StopTimeout, 10, 3600); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range p.DependsOn {
		if err := checkID("depends_on", d); err != nil {
			return err
		}
		if d == p.ID {
			return fault.Invalid("depends_on", "cycle: %s → %s", p.ID, p.ID)
		}
		if seen[d] {
			return fault.Invalid("depends_on", "%q is listed twice", d)
		}
		seen[d] = true
	}
	if p.Readiness != nil {
		return p.Readiness.validate()
	}
	return nil
}

// fieldOf names the field holding s (for the NUL check).
func fieldOf(p *Program, s string) string {
	switch s {
	case p.Command:
		return "command"
	case p.Cwd:
		return "cwd"
	case p.User:
		return "user"
	}
	return "args"
}

func (r *Probe) validate() error {
	n := 0
	if r.TCP != "" {
		n++
		host, port, err := net.SplitHostPort(r.TCP)
		if err != nil || port == "" || host == "" {
			return fault.Invalid("readiness.tcp", "must be host:port, got %q", r.TCP)
		}
	}
	if r.HTTP != "" {
		n++
		u, err := url.Parse(r.HTTP)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fault.Invalid("readiness.http", "must be an http or https URL, got %q", r.HTTP)
		}
	}
	if len(r.Command) > 0 {
		n++
		if strings.TrimSpace(r.Command[0]) == "" {
			return fault.Invalid("readiness.command", "the first element must be the program to run")
		}
	}
	if n != 1 {
		return fault.Invalid("readiness", "set exactly one of tcp, http or command")
	}
	if err := seconds("readiness.interval", &r.Interval, 0.2, 3600); err != nil {
		return err
	}
	return seconds("readiness.timeout", &r.Timeout, 60, 86400)
}

// seconds fills the default for an absent (0) value and checks 0 < v <= max.
func seconds(field string, v *float64, def, max float64) error {
	if *v == 0 {
		*v = def
	}
	if *v < 0 || *v > max {
		return fault.Invalid(field, "must be a number of seconds above 0 and at most %g, got %g", max, *v)
	}
	return nil
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// checkGraph checks that every depends_on names a known program and that
// the dependencies have no cycle; a cycle is answered as a path
// (a → b → c → a).
func checkGraph(progs map[string]*Program) error {
	_, err := graphProblem(progs)
	return err
}

// graphProblem is checkGraph's error with the programs at fault: the one
// with an unknown dependency, or the members of a cycle.
func graphProblem(progs map[string]*Program) ([]string, error) {
	ids := slices.Sorted(maps.Keys(progs))
	for _, id := range ids {
		for _, d := range progs[id].DependsOn {
			if _, ok := progs[d]; !ok {
				return []string{id}, fault.Invalid("depends_on", "program %q depends on %q, which is not defined", id, d)
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) ([]string, error)
	visit = func(id string) ([]string, error) {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range progs[id].DependsOn {
			switch color[d] {
			case grey:
				members := append([]string(nil), stack[slices.Index(stack, d):]...)
				return members, fault.Invalid("depends_on", "cycle: %s", strings.Join(append(members, d), " → "))
			case white:
				if bad, err := visit(d); err != nil {
					return bad, err
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil, nil
	}
	for _, id := range ids {
		if color[id] == white {
			if bad, err := visit(id); err != nil {
				return bad, err
			}
		}
	}
	return nil, nil
}
