package process

import (
	"context"
	"os"
	"strconv"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// Start starts a process in the background and answers its record at
// once. A client_token already used answers that process (Created false).
func (s *Service) Start(ctx context.Context, in StartInput) (StartResult, error) {
	p, created, err := s.start(in.Spec, in.KeepStdinOpen, 0, [3]any{"start", in.KeepStdinOpen, in.HoldOutput}, in.HoldOutput)
	if err != nil {
		return StartResult{}, err
	}
	if created {
		// The record is on disk before the answer: a restart after it
		// still knows the process.
		select {
		case <-p.save(p.snapshot()):
		case <-ctx.Done():
		}
	}
	return StartResult{Process: p.snapshot(), Created: created}, nil
}

// start checks what needs the system (user, cwd), applies client_token
// and the running limit, and launches. extra is what else the request
// said that a client_token replay must match.
func (s *Service) start(spec Spec, keepStdin bool, captureMax int, extra any, holdOutput bool) (*process, bool, error) {
	spec.User = s.deps.Common.User(spec.User)
	attr, userEnv, err := proc.Attr(spec.User)
	if err != nil {
		return nil, false, fault.Invalid("user", "%v", err)
	}
	if spec.Cwd != "" {
		if st, err := os.Stat(spec.Cwd); err != nil || !st.IsDir() {
			return nil, false, fault.Invalid("cwd", "%s is not an existing directory", spec.Cwd)
		}
	}
	home := userEnv
	if spec.User == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = []string{"HOME=" + h}
		}
	}
	cwd := proc.WorkDir(spec.Cwd, home)
	hash := specHash(spec, extra)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, fault.Errorf(fault.CodeUnavailable, "the process service is stopping")
	}
	if tok := spec.ClientToken; tok != "" {
		if p := s.tokens[tok]; p != nil {
			s.mu.Unlock()
			<-p.started
			if p.hash != hash {
				return nil, false, &fault.Error{Code: fault.CodeConflict, Field: "client_token", Details: "client_token",
					Message: "client_token: already used by process " + p.id + " for a different request"}
			}
			return p, false, nil
		}
	}
	if s.running >= s.set.MaxRunning {
		s.mu.Unlock()
		return nil, false, &fault.Error{Code: fault.CodeTooManyRequests, Headers: map[string]string{"Retry-After": "1"},
			Message: "at most " + strconv.Itoa(s.set.MaxRunning) + " processes may run at once (--process-max-running); wait for one to end"}
	}
	p := s.newProcess(spec, cwd, hash, keepStdin, captureMax)
	if holdOutput {
		p.log.ReleaseHold(p.log.AddHold(0))
	}
	s.procs[p.id] = p
	if spec.ClientToken != "" {
		s.tokens[spec.ClientToken] = p
	}
	s.running++
	s.wg.Add(1) // the supervisor's, or failStart's
	s.mu.Unlock()
	s.launch(p, attr, buildEnv(userEnv, spec.Env, p.id, spec.PTY != nil))
	return p, true, nil
}
