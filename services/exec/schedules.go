package exec

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/proc"
)

// Overlap policies: what a due time does while the schedule's last run
// is still going.
const (
	OverlapSkip  = "skip"  // record a skipped run (the default, as a systemd timer does not start a running unit)
	OverlapQueue = "queue" // run after the current one ends (at most maxQueue waiting)
	OverlapAllow = "allow" // run beside it
)

// maxQueue bounds the runs a queue-policy schedule keeps waiting.
const maxQueue = 10

// Schedule is one entry of the schedules file.
type Schedule struct {
	Name     string            `json:"name" yaml:"name" required:"true"`
	Cron     string            `json:"schedule" yaml:"schedule" required:"true" doc:"robfig/cron: five fields, or six with seconds first; @hourly, @daily, @weekly, @monthly, @yearly, @every 90s"`
	Timezone string            `json:"timezone,omitempty" yaml:"timezone" doc:"IANA zone the fields are read in (default UTC)"`
	Command  string            `json:"command" yaml:"command" required:"true" doc:"run with /bin/sh -c"`
	Timeout  string            `json:"timeout" yaml:"timeout" doc:"Go duration (90s, 5m, 1h30m); a run still going then is killed with its process group and recorded timed_out; default 1h"`
	Overlap  string            `json:"overlap" yaml:"overlap" enum:"skip,queue,allow" doc:"default skip"`
	User     string            `json:"user,omitempty" yaml:"user" doc:"run as this user (the agent must be root to switch); default the agent's --run-as user, else its own"`
	Cwd      string            `json:"cwd,omitempty" yaml:"cwd" doc:"absolute working directory (default the user's home, else /)"`
	Env      map[string]string `json:"env,omitempty" yaml:"env" doc:"added to the agent's environment less its own settings (DECKHAND_* are never passed on)"`

	sched   robfig.Schedule
	timeout time.Duration
}

// file is the schedules file: YAML (JSON is YAML too).
type file struct {
	Schedules []Schedule `yaml:"schedules"`
}

// parser reads robfig/cron's standard five fields or six with seconds
// first, and its descriptors (@every included).
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom |
	robfig.Month | robfig.Dow | robfig.Descriptor)

var nameRule = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// loadFile reads and checks the whole schedules file; any error names the
// file and the field (schedules[2].timeout) and nothing of the file is used.
// An absent file is no schedules.
func loadFile(path string) ([]*Schedule, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &fault.Error{Code: fault.CodeBackend, Details: "file", Message: "read the schedules file", Cause: err}
	}
	return parseFile(path, raw)
}

func parseFile(path string, raw []byte) ([]*Schedule, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, &fault.Error{Code: fault.CodeInvalid, Details: "file", Message: path + ": " + yamlText(err)}
	}
	seen := map[string]int{}
	out := make([]*Schedule, 0, len(f.Schedules))
	for i := range f.Schedules {
		s := &f.Schedules[i]
		field := fmt.Sprintf("schedules[%d]", i)
		if err := s.check(); err != nil {
			var pe *fault.Error
			errors.As(err, &pe)
			return nil, &fault.Error{Code: fault.CodeInvalid, Details: field + "." + pe.Details,
				Message: path + ": " + field + "." + pe.Message}
		}
		if j, dup := seen[s.Name]; dup {
			return nil, &fault.Error{Code: fault.CodeInvalid, Details: field + ".name",
				Message: fmt.Sprintf("%s: %s.name: %q is also the name of schedules[%d]", path, field, s.Name, j)}
		}
		seen[s.Name] = i
		out = append(out, s)
	}
	return out, nil
}

// yamlText is a YAML error without Go type names.
func yamlText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	msg = typeName.ReplaceAllString(msg, "")
	msg = strings.ReplaceAll(msg, "into exec.file", "into the file's top level (schedules:)")
	msg = strings.ReplaceAll(msg, "into []exec.Schedule", "into the schedules list")
	msg = strings.ReplaceAll(msg, "into map[string]string", "into env (a map of strings)")
	lines := strings.Split(msg, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}

var typeName = regexp.MustCompile(` in type [^\n]*`)

// check validates one schedule and fills its defaults.
func (s *Schedule) check() error {
	if !nameRule.MatchString(s.Name) {
		return fault.Invalid("name", "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit, got %q", s.Name)
	}
	if strings.TrimSpace(s.Cron) == "" {
		return fault.Invalid("schedule", "required")
	}
	if strings.HasPrefix(s.Cron, "TZ=") || strings.HasPrefix(s.Cron, "CRON_TZ=") {
		return fault.Invalid("schedule", "set the zone with timezone, not in the expression")
	}
	loc := time.UTC
	if s.Timezone != "" {
		l, err := time.LoadLocation(s.Timezone)
		if err != nil || s.Timezone == "Local" {
			return fault.Invalid("timezone", "unknown IANA time zone %q", s.Timezone)
		}
		loc = l
	}
	sched, err := parser.Parse(s.Cron)
	if err != nil {
		return fault.Invalid("schedule", "%s", err.Error())
	}
	if spec, ok := sched.(*robfig.SpecSchedule); ok {
		spec.Location = loc
	}
	s.sched = sched
	if strings.TrimSpace(s.Command) == "" {
		return fault.Invalid("command", "required")
	}
	if strings.ContainsRune(s.Command, 0) {
		return fault.Invalid("command", "must not contain NUL")
	}
	s.Timeout = cmp.Or(s.Timeout, "1h")
	d, err := time.ParseDuration(s.Timeout)
	if err != nil || d <= 0 || d > 7*24*time.Hour {
		return fault.Invalid("timeout", "must be a duration above 0 and at most 168h (90s, 5m, 1h30m), got %q", s.Timeout)
	}
	s.timeout = d
	switch s.Overlap {
	case "":
		s.Overlap = OverlapSkip
	case OverlapSkip, OverlapQueue, OverlapAllow:
	default:
		return fault.Invalid("overlap", "must be skip, queue or allow, got %q", s.Overlap)
	}
	if s.Cwd != "" && !strings.HasPrefix(s.Cwd, "/") {
		return fault.Invalid("cwd", "must be an absolute path, got %q", s.Cwd)
	}
	if k, ok := proc.CheckEnv(s.Env); !ok {
		return fault.Invalid("env", "variable %q: names must be non-empty without '=' and NUL; values without NUL", k)
	}
	return nil
}

// same reports whether two schedules are the same definition (a reload
// keeps the run state of unchanged ones).
func (s *Schedule) same(o *Schedule) bool {
	if s.Name != o.Name || s.Cron != o.Cron || s.Timezone != o.Timezone || s.Command != o.Command ||
		s.Timeout != o.Timeout || s.Overlap != o.Overlap || s.User != o.User || s.Cwd != o.Cwd || len(s.Env) != len(o.Env) {
		return false
	}
	for k, v := range s.Env {
		if ov, ok := o.Env[k]; !ok || ov != v {
			return false
		}
	}
	return true
}
