package cron

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strings"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/proc"
)

// outputTail is how much of a run's output is kept.
const outputTail = 4096

// splitPercent reads a crontab command as cron does: the first unescaped
// % ends the command, the rest is its stdin with each further unescaped %
// a newline; \% is a literal %.
func splitPercent(cmd string) (command, stdin string) {
	var out, in strings.Builder
	cur, split := &out, false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\\' && i+1 < len(cmd) && cmd[i+1] == '%':
			cur.WriteByte('%')
			i++
		case c == '%' && !split:
			split, cur = true, &in
		case c == '%':
			cur.WriteByte('\n')
		default:
			cur.WriteByte(c)
		}
	}
	if split {
		in.WriteByte('\n')
	}
	return out.String(), in.String()
}

// jobEnv is the environment cron gives a job: SHELL=/bin/sh,
// PATH=/usr/bin:/bin, HOME, LOGNAME and USER of the user it runs as, then
// the crontab's variables above the entry in order (they may override
// SHELL, PATH and HOME; LOGNAME and USER stay the user's).
func jobEnv(u *user.User, vars []string) []string {
	env := map[string]string{"SHELL": "/bin/sh", "PATH": "/usr/bin:/bin", "HOME": u.HomeDir,
		"LOGNAME": u.Username, "USER": u.Username}
	order := []string{"SHELL", "PATH", "HOME", "LOGNAME", "USER"}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		if k == "LOGNAME" || k == "USER" {
			continue
		}
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}

func envGet(env []string, key string) string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}

// execRun runs j's command as cron would (its user, environment, shell and
// stdin), records the outcome in run and reports it to the journal and, on
// failure, to the notifier.
func (s *Service) execRun(ctx context.Context, j job, run *Run) {
	out := &proc.Tail{Max: outputTail}
	code, err := s.runCommand(ctx, j, out)
	end := s.deps.Clock.Now()
	run.EndedAt, run.Output = &end, out.String()
	switch {
	case err != nil:
		run.Status, run.Error = "failed", err.Error()
	case code != 0:
		run.Status, run.ExitCode = "failed", &code
	default:
		run.Status, run.ExitCode = "succeeded", &code
	}
	if ctx.Err() != nil && run.Status == "failed" {
		run.Status, run.Error = "interrupted", "the cron service stopped during the run"
	}
	if err := s.saveRun(run); err != nil {
		s.log.Error("cron: record run", "entry", j.id, "err", err)
	}
	level := "info"
	if run.Status != "succeeded" {
		level = "error"
	}
	fields := map[string]any{"entry": j.id, "run": run.ID, "schedule": j.spec, "status": run.Status,
		"duration_ms": end.Sub(run.StartedAt).Milliseconds(), "output": run.Output}
	if run.ExitCode != nil {
		fields["exit_code"] = *run.ExitCode
	}
	s.deps.Journal.Record(contract.JournalEntry{Time: run.StartedAt, Source: "cron", Level: level,
		Message: "entry " + j.id + " ran", Fields: fields})
	if run.Status == "failed" {
		title := fmt.Sprintf("Scheduled command failed: %s", j.command)
		data := map[string]any{"entry": j.id, "run": run.ID}
		body := run.Output
		if run.ExitCode != nil {
			title = fmt.Sprintf("Scheduled command failed (exit %d): %s", *run.ExitCode, j.command)
			data["exit_code"] = *run.ExitCode
		} else {
			body = run.Error
		}
		s.deps.Notifier.Notify(contract.Event{Time: run.StartedAt, Kind: contract.EventScheduleFailed, Source: "cron",
			Level: "error", Title: title, Body: body, Data: data})
	}
}

// runCommand answers the exit code, or an error when the command could not
// start (unknown user, no permission to run as it, no shell).
func (s *Service) runCommand(ctx context.Context, j job, out *proc.Tail) (int, error) {
	u, err := runUser(j.user)
	if err != nil {
		return 0, err
	}
	env := jobEnv(u, j.env)
	shell := envGet(env, "SHELL")
	command, stdin := splitPercent(j.command)
	cmd := exec.CommandContext(ctx, shell, "-c", command)
	cmd.Env, cmd.Dir = env, envGet(env, "HOME")
	if st, err := os.Stat(cmd.Dir); err != nil || !st.IsDir() {
		cmd.Dir = "/" // a user without a home directory (nobody) still runs
	}
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = out, out
	// A run still going when the service closes is killed with its
	// process group; WaitDelay stops waiting on pipes a left-behind
	// grandchild may hold.
	cmd.WaitDelay = time.Second
	if err := asUser(cmd, u); err != nil {
		return 0, err
	}
	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), nil
	case err != nil:
		return 0, err
	}
	return 0, nil
}

// runUser is the user a run is for: the entry's user field, or the
// service's own user.
func runUser(name string) (*user.User, error) {
	if name == "" {
		return user.Current()
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", name, err)
	}
	return u, nil
}
