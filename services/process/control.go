package process

import (
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// stdinTimeout bounds one write to a process's input: a process that does
// not read it fills the pipe, and the request must not hang on it.
const stdinTimeout = 10 * time.Second

func ended(p *process) error {
	return &fault.Error{Code: fault.CodeConflict, Details: "state",
		Message: "process " + p.id + " is no longer running"}
}

// WriteStdin writes bytes to a process's standard input.
func (s *Service) WriteStdin(ctx context.Context, in StdinInput) (StdinResult, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return StdinResult{}, err
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	f := p.input()
	if f == nil {
		if p.snapshot().ended() {
			return StdinResult{}, ended(p)
		}
		return StdinResult{}, &fault.Error{Code: fault.CodeConflict, Details: "stdin",
			Message: "the standard input of process " + p.id + " is closed (start it with keep_stdin_open to write to it)"}
	}
	_ = f.SetWriteDeadline(time.Now().Add(stdinTimeout))
	n, err := f.Write(in.bytes)
	_ = f.SetWriteDeadline(time.Time{})
	switch {
	case err == nil:
		return StdinResult{Written: n}, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return StdinResult{}, &fault.Error{Code: fault.CodeTimeout, Details: "written=" + strconv.Itoa(n),
			Message: "process " + p.id + " did not read its input within " + stdinTimeout.String() + ": " + strconv.Itoa(n) + " of " + strconv.Itoa(len(in.bytes)) + " bytes written"}
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EIO), errors.Is(err, os.ErrClosed):
		return StdinResult{}, &fault.Error{Code: fault.CodeConflict, Details: "written=" + strconv.Itoa(n),
			Message: "process " + p.id + " no longer reads its input (" + strconv.Itoa(n) + " bytes written)"}
	}
	return StdinResult{}, fault.Internal("write to the process's input", err)
}

// CloseStdin closes a process's standard input (end of file); on a pty it
// types the end-of-file character (Ctrl-D), which a program reading the
// terminal in canonical mode takes as end of file.
func (s *Service) CloseStdin(ctx context.Context, in IDInput) (Process, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return Process{}, err
	}
	if p.closeStdin() {
		return p.snapshot(), nil
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if f := p.input(); f != nil {
		_ = f.SetWriteDeadline(time.Now().Add(stdinTimeout))
		_, err := f.Write([]byte{4})
		_ = f.SetWriteDeadline(time.Time{})
		if err != nil {
			return Process{}, ended(p)
		}
	}
	return p.snapshot(), nil
}

// Resize sets the size of a process's pty.
func (s *Service) Resize(ctx context.Context, in ResizeInput) (Process, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return Process{}, err
	}
	p.mu.Lock()
	pty := p.pty
	p.mu.Unlock()
	if pty == nil {
		if p.snapshot().ended() {
			return Process{}, ended(p)
		}
		return Process{}, &fault.Error{Code: fault.CodeConflict, Details: "pty",
			Message: "process " + p.id + " has no pty (start it with pty to size one)"}
	}
	if err := proc.SetWinsize(pty, in.Cols, in.Rows); err != nil {
		return Process{}, fault.Internal("resize the pty", err)
	}
	p.mu.Lock()
	p.rec.PTY = &PTYSize{Rows: in.Rows, Cols: in.Cols}
	p.mu.Unlock()
	return p.snapshot(), nil
}

// Signal sends a signal to a process's whole process group.
func (s *Service) Signal(ctx context.Context, in SignalInput) (Process, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return Process{}, err
	}
	sig := syscall.Signal(in.sig)
	sent, err := p.signalGroup(sig)
	if err != nil {
		return Process{}, fault.Internal("signal the process group", err)
	}
	if !sent {
		return Process{}, ended(p)
	}
	f := p.fields()
	f["signal"] = proc.SignalName(sig)
	s.journal("info", "process "+p.id+": SIG"+proc.SignalName(sig)+" sent to its process group", f)
	return p.snapshot(), nil
}

// Kill stops a process's whole tree (SIGTERM, SIGKILL after the grace)
// and answers its final record; a process already ended answers as it is.
func (s *Service) Kill(ctx context.Context, in KillInput) (Process, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return Process{}, err
	}
	select {
	case <-p.ended:
		return p.snapshot(), nil
	default:
	}
	grace := s.set.KillGrace
	if in.GraceMS > 0 {
		grace = time.Duration(in.GraceMS) * time.Millisecond
	}
	select {
	case p.kill <- grace:
		f := p.fields()
		f["grace_ms"] = ms(grace)
		s.journal("info", "process "+p.id+": kill requested", f)
	default: // a kill is already under way
	}
	select {
	case <-p.ended:
	case <-ctx.Done():
	}
	return p.snapshot(), nil
}
