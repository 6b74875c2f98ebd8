package exec

import (
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"sync"
	"syscall"
	"time"

	"deckhand/platform/contract"
	"deckhand/platform/proc"
)

const (
	// outputMax is how much of each stream a record keeps (the end).
	outputMax = 16 << 10
	// killGrace is how long a timed-out run has between SIGTERM and SIGKILL.
	killGrace = 2 * time.Second
	// outputDrain bounds the wait for output after the command ended.
	outputDrain = 500 * time.Millisecond
)

// execute runs def's command for record r and answers the finished record.
func (s *Service) execute(def *Schedule, r Run) Run {
	stdout, stderr := &proc.Tail{Max: outputMax}, &proc.Tail{Max: outputMax}
	began := time.Now()
	code, status, err := s.runCommand(def, stdout, stderr)
	took := time.Since(began)
	end := r.StartedAt.Add(took)
	r.EndedAt, r.DurationSeconds, r.Status = &end, took.Seconds(), status
	r.Stdout, r.Stderr = stdout.String(), stderr.String()
	r.StdoutTruncated, r.StderrTruncated = stdout.Truncated(), stderr.Truncated()
	if err != nil {
		r.Error = err.Error()
	} else {
		r.ExitCode = &code
	}
	if status == StatusInterrupted {
		r.Error = "the exec service stopped during the run"
	}
	return r
}

// report writes a finished run to the journal, and a failed or timed-out
// one to the notifier as schedule.failed.
func (s *Service) report(def *Schedule, r Run) {
	s.journalRun(def, r)
	if r.Status == StatusFailed || r.Status == StatusTimedOut {
		title := fmt.Sprintf("Scheduled command %s failed", def.Name)
		data := map[string]any{"schedule": def.Name, "run": r.ID, "status": r.Status}
		body := r.Stderr
		switch {
		case r.Status == StatusTimedOut:
			title = fmt.Sprintf("Scheduled command %s timed out after %s", def.Name, def.Timeout)
		case r.ExitCode != nil:
			title = fmt.Sprintf("Scheduled command %s failed (exit %d)", def.Name, *r.ExitCode)
		default:
			body = r.Error
		}
		if r.ExitCode != nil {
			data["exit_code"] = *r.ExitCode
		}
		s.deps.Notifier.Notify(contract.Event{Time: r.StartedAt, Kind: contract.EventScheduleFailed, Source: "exec",
			Level: "error", Title: title, Body: body, Data: data})
	}
}

// journalRun writes one entry per run.
func (s *Service) journalRun(def *Schedule, r Run) {
	level := "info"
	if r.Status != StatusSucceeded {
		level = "error"
	}
	if r.Status == StatusSkipped {
		level = "warn"
	}
	fields := map[string]any{"schedule": def.Name, "run": r.ID, "trigger": r.Trigger, "status": r.Status,
		"duration_ms": int64(r.DurationSeconds * 1000)}
	if r.ExitCode != nil {
		fields["exit_code"] = *r.ExitCode
	}
	if r.Error != "" {
		fields["error"] = r.Error
	}
	s.deps.Journal.Record(contract.JournalEntry{Time: r.StartedAt, Source: "exec", Level: level,
		Message: "schedule " + def.Name + ": " + r.Status, Fields: fields})
}

// runCommand runs /bin/sh -c command in its own process group. It answers
// the exit code (128+N for signal N) and the status; err is set when the
// command could not start.
func (s *Service) runCommand(def *Schedule, stdout, stderr io.Writer) (int, string, error) {
	attr, userEnv, err := proc.Attr(s.deps.Common.User(def.User))
	if err != nil {
		return 0, StatusFailed, err
	}
	cmd := osexec.Command("/bin/sh", "-c", def.Command)
	cmd.SysProcAttr = attr
	cmd.Env = proc.Env(userEnv, proc.Vars(def.Env))
	cmd.Dir = proc.WorkDir(def.Cwd, userEnv)
	parents, err := s.spawner.StartPiped(cmd)
	if err != nil {
		return 0, StatusFailed, err
	}
	var copying sync.WaitGroup
	for i, w := range []io.Writer{stdout, stderr} {
		copying.Go(func() {
			defer parents[i].Close()
			_, _ = io.Copy(w, parents[i])
		})
	}
	exited := make(chan *os.ProcessState, 1)
	go func() { _ = cmd.Wait(); exited <- cmd.ProcessState }()
	pid := cmd.Process.Pid
	timer := time.NewTimer(def.timeout)
	defer timer.Stop()
	status := ""
	var ps *os.ProcessState
	select {
	case ps = <-exited:
	case <-timer.C:
		status = StatusTimedOut
		ps = proc.StopTree(pid, syscall.SIGTERM, killGrace, exited)
	case <-s.ctx.Done():
		status = StatusInterrupted
		ps = proc.StopTree(pid, syscall.SIGTERM, killGrace, exited)
	}
	// What the command left behind in its group ends with it.
	_ = proc.KillGroup(pid, syscall.SIGKILL)
	done := make(chan struct{})
	go func() { copying.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputDrain):
	}
	code, _ := proc.ExitStatus(ps)
	if status == "" {
		status = StatusSucceeded
		if code != 0 {
			status = StatusFailed
		}
	}
	return code, status, nil
}
