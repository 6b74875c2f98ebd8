package daemon

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// View is a program's definition and live status.
type View struct {
	Program
	Status Status `json:"status" required:"true"`
}

// List is the answer of GET /api/v1/daemon/programs.
type List struct {
	Programs     []View   `json:"programs" required:"true"`
	SkippedFiles []string `json:"skipped_files" required:"true" doc:"program files not loaded at start, each \"path: reason\""`
}

// SignalRequest is the body of POST .../{id}/signal.
type SignalRequest struct {
	Signal string `json:"signal" required:"true" doc:"a name with or without SIG (HUP, SIGUSR1) or a number"`
	Group  *bool  `json:"group,omitempty" doc:"send to the whole process group (default true) or only the main process"`
}

// Validate checks the signal.
func (r *SignalRequest) Validate() error {
	if r.Signal == "" {
		return fault.Invalid("signal", "required")
	}
	if _, err := proc.ParseSignal(r.Signal); err != nil {
		return fault.Invalid("signal", "%s", err.Error())
	}
	return nil
}

// waitSettled waits until p is running, exited, fatal or stopped, or
// until timeout or ctx ends.
func (s *Service) waitSettled(ctx context.Context, p *program, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := s.changes()
		switch p.status().State {
		case StateRunning, StateExited, StateFatal, StateStopped:
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (p *program) view() View {
	p.mu.Lock()
	def := *p.def
	p.mu.Unlock()
	return View{Program: def, Status: p.status()}
}

// ProgramRef names a program.
type ProgramRef struct {
	ID string `path:"id" doc:"the program's id"`
}

// ProgramFilter is the query of GET /api/v1/daemon/programs.
type ProgramFilter struct {
	State string `query:"state" enum:"stopped,starting,running,backoff,exited,fatal" doc:"only programs in this state"`
}

// ProgramPut is PUT /api/v1/daemon/programs/{id}.
type ProgramPut struct {
	ProgramRef
	Body Program
}

// ProgramAnswer is a program's view: 201 when PUT created it, 200 otherwise.
type ProgramAnswer struct {
	Status int
	Body   View
}

// StartRequest is POST .../start and .../restart.
type StartRequest struct {
	ProgramRef
	Wait    bool    `query:"wait" default:"false" doc:"answer once the program is running, exited or fatal (at most timeout seconds) instead of at once"`
	Timeout float64 `query:"timeout" exclusiveMinimum:"0" maximum:"600" default:"30" doc:"seconds wait=true waits at most"`
}

// SignalInput is POST .../signal.
type SignalInput struct {
	ProgramRef
	Body SignalRequest
}

// List answers every program (only those in f.State, when set), by id.
func (s *Service) List(_ context.Context, f ProgramFilter) (List, error) {
	state := f.State
	s.mu.Lock()
	progs := make([]*program, 0, len(s.programs))
	for _, id := range s.ids() {
		progs = append(progs, s.programs[id])
	}
	l := List{Programs: []View{}, SkippedFiles: append([]string{}, s.problems...)}
	s.mu.Unlock()
	for _, p := range progs {
		v := p.view()
		if state == "" || v.Status.State == state {
			l.Programs = append(l.Programs, v)
		}
	}
	return l, nil
}

func (s *Service) find(id string) (*program, error) {
	if p := s.program(id); p != nil {
		return p, nil
	}
	return nil, fault.NotFound("program", id)
}

// Get answers one program.
func (s *Service) Get(_ context.Context, ref ProgramRef) (View, error) {
	p, err := s.find(ref.ID)
	if err != nil {
		return View{}, err
	}
	return p.view(), nil
}

// Put creates or replaces a program: validated (fields, dependencies,
// cycles) against every other definition before anything is written.
func (s *Service) Put(ctx context.Context, in ProgramPut) (ProgramAnswer, error) {
	v, created, err := s.put(in.ID, in.Body)
	if err != nil {
		return ProgramAnswer{}, err
	}
	if created {
		return ProgramAnswer{Status: http.StatusCreated, Body: v}, nil
	}
	return ProgramAnswer{Status: http.StatusOK, Body: v}, nil
}

func (s *Service) put(id string, def Program) (View, bool, error) {
	if err := checkID("id", id); err != nil {
		return View{}, false, err
	}
	if def.ID != "" && def.ID != id {
		return View{}, false, fault.Invalid("id", "%q differs from the id in the path %q", def.ID, id)
	}
	def.ID = id
	if err := def.Validate(); err != nil {
		return View{}, false, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return View{}, false, fault.Errorf(fault.CodeUnavailable, "the daemon service is stopping")
	}
	graph := map[string]*Program{}
	for k, p := range s.programs {
		graph[k] = p.def
	}
	graph[id] = &def
	if err := checkGraph(graph); err != nil {
		s.mu.Unlock()
		return View{}, false, err
	}
	p, existed := s.programs[id]
	same := false
	if existed {
		p.mu.Lock()
		same = reflect.DeepEqual(p.def, &def)
		p.mu.Unlock()
	}
	if !same {
		if err := writeProgram(s.dir, &def); err != nil {
			s.mu.Unlock()
			return View{}, false, fault.Internal("write the program file", err)
		}
	}
	// p.def changes under both locks: readers hold either. A running
	// loop keeps the definition it started with until restarted below.
	if !existed {
		p = newProgram(s, &def)
		s.programs[id] = p
	} else if !same {
		p.mu.Lock()
		p.def = &def
		p.mu.Unlock()
	}
	s.mu.Unlock()
	if same {
		return p.view(), false, nil // the same definition: a running program is left alone
	}
	s.journal(id, "info", "definition written", nil)
	if !existed {
		if *def.Autostart {
			p.start()
		}
		return p.view(), true, nil
	}
	if p.supervised() {
		p.halt()
		p.start()
	}
	return p.view(), false, nil
}

// Delete stops a program and removes its file; 409 while others depend on it.
func (s *Service) Delete(_ context.Context, ref ProgramRef) (View, error) {
	id := ref.ID
	s.mu.Lock()
	p, ok := s.programs[id]
	if !ok {
		s.mu.Unlock()
		return View{}, fault.NotFound("program", id)
	}
	var users []string
	for _, oid := range s.ids() {
		for _, d := range s.programs[oid].def.DependsOn {
			if d == id {
				users = append(users, oid)
			}
		}
	}
	if len(users) > 0 {
		s.mu.Unlock()
		return View{}, &fault.Error{Code: fault.CodeConflict, Details: "depends_on",
			Message: fmt.Sprintf("program %q is a dependency of %s; change their depends_on first", id, strings.Join(users, ", "))}
	}
	if err := removeProgram(s.dir, id); err != nil {
		s.mu.Unlock()
		return View{}, fault.Internal("remove the program file", err)
	}
	delete(s.programs, id)
	s.mu.Unlock()
	p.halt()
	s.journal(id, "info", "deleted", nil)
	return p.view(), nil
}

// Enable starts a program with the service from now on (autostart true).
func (s *Service) Enable(_ context.Context, ref ProgramRef) (View, error) {
	return s.setAutostart(ref.ID, true)
}

// Disable keeps a program from starting with the service (autostart
// false); it does not stop it.
func (s *Service) Disable(_ context.Context, ref ProgramRef) (View, error) {
	return s.setAutostart(ref.ID, false)
}

// setAutostart enables or disables a program (writes its file).
func (s *Service) setAutostart(id string, on bool) (View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.programs[id]
	if !ok {
		return View{}, fault.NotFound("program", id)
	}
	p.mu.Lock()
	def := *p.def
	p.mu.Unlock()
	def.Autostart = &on
	if err := writeProgram(s.dir, &def); err != nil {
		return View{}, fault.Internal("write the program file", err)
	}
	p.mu.Lock()
	p.def = &def
	p.mu.Unlock()
	return p.view(), nil
}

// Start supervises a program; with wait, it answers once the program has
// settled (running, exited, fatal) or timeout passed.
func (s *Service) Start(ctx context.Context, in StartRequest) (View, error) {
	p, err := s.find(in.ID)
	if err != nil {
		return View{}, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return View{}, fault.Errorf(fault.CodeUnavailable, "the daemon service is stopping")
	}
	p.start()
	if in.Wait {
		s.waitSettled(ctx, p, time.Duration(in.Timeout*float64(time.Second)))
	}
	return p.view(), nil
}

// Stop stops a program and answers once it has.
func (s *Service) Stop(_ context.Context, ref ProgramRef) (View, error) {
	p, err := s.find(ref.ID)
	if err != nil {
		return View{}, err
	}
	p.halt()
	return p.view(), nil
}

// Restart stops a program, then starts it as Start does.
func (s *Service) Restart(ctx context.Context, in StartRequest) (View, error) {
	if _, err := s.Stop(ctx, in.ProgramRef); err != nil {
		return View{}, err
	}
	return s.Start(ctx, in)
}

// Signal sends a signal to a running program's process group (or main
// process).
func (s *Service) Signal(_ context.Context, in SignalInput) (View, error) {
	id, req := in.ID, in.Body
	p, err := s.find(id)
	if err != nil {
		return View{}, err
	}
	sig, _ := proc.ParseSignal(req.Signal)
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid <= 0 {
		return View{}, &fault.Error{Code: fault.CodeConflict, Details: "state",
			Message: fmt.Sprintf("program %q has no running process (state %s)", id, p.status().State)}
	}
	if req.Group == nil || *req.Group {
		err = proc.KillGroup(pid, sig)
	} else {
		err = syscall.Kill(pid, sig)
	}
	if err != nil {
		return View{}, fault.Internal("send the signal", err)
	}
	s.journal(id, "info", "sent SIG"+proc.SignalName(sig), map[string]any{"pid": pid})
	return p.view(), nil
}
