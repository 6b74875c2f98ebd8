package daemon

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"time"

	"deckhand/platform"
	"deckhand/platform/proc"
)

func (p *program) view() View {
	p.mu.Lock()
	def := *p.def
	p.mu.Unlock()
	return View{Program: def, Status: p.status()}
}

// List answers every program (only those in state, when set), by id.
func (s *Service) List(state string) List {
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
	return l
}

func (s *Service) find(id string) (*program, error) {
	if p := s.program(id); p != nil {
		return p, nil
	}
	return nil, platform.NotFound("program", id)
}

// Get answers one program.
func (s *Service) Get(id string) (View, error) {
	p, err := s.find(id)
	if err != nil {
		return View{}, err
	}
	return p.view(), nil
}

// Put creates or replaces a program: validated (fields, dependencies,
// cycles) against every other definition before anything is written.
func (s *Service) Put(ctx context.Context, id string, def Program) (View, bool, error) {
	if err := checkID("id", id); err != nil {
		return View{}, false, err
	}
	if def.ID != "" && def.ID != id {
		return View{}, false, platform.Invalid("id", "%q differs from the id in the path %q", def.ID, id)
	}
	def.ID = id
	if err := def.Validate(); err != nil {
		return View{}, false, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return View{}, false, platform.Errorf(platform.CodeUnavailable, "the daemon service is stopping")
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
			return View{}, false, platform.Internal("write the program file", err)
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
func (s *Service) Delete(id string) (View, error) {
	s.mu.Lock()
	p, ok := s.programs[id]
	if !ok {
		s.mu.Unlock()
		return View{}, platform.NotFound("program", id)
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
		return View{}, &platform.Error{Code: platform.CodeConflict, Details: "depends_on",
			Message: fmt.Sprintf("program %q is a dependency of %s; change their depends_on first", id, strings.Join(users, ", "))}
	}
	if err := removeProgram(s.dir, id); err != nil {
		s.mu.Unlock()
		return View{}, platform.Internal("remove the program file", err)
	}
	delete(s.programs, id)
	s.mu.Unlock()
	p.halt()
	s.journal(id, "info", "deleted", nil)
	return p.view(), nil
}

// SetAutostart enables or disables a program (writes its file).
func (s *Service) SetAutostart(id string, on bool) (View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.programs[id]
	if !ok {
		return View{}, platform.NotFound("program", id)
	}
	p.mu.Lock()
	def := *p.def
	p.mu.Unlock()
	def.Autostart = &on
	if err := writeProgram(s.dir, &def); err != nil {
		return View{}, platform.Internal("write the program file", err)
	}
	p.mu.Lock()
	p.def = &def
	p.mu.Unlock()
	return p.view(), nil
}

// Start supervises a program; with wait, it answers once the program has
// settled (running, exited, fatal) or timeout passed.
func (s *Service) Start(ctx context.Context, id string, wait bool, timeout time.Duration) (View, error) {
	p, err := s.find(id)
	if err != nil {
		return View{}, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return View{}, platform.Errorf(platform.CodeUnavailable, "the daemon service is stopping")
	}
	p.start()
	if wait {
		s.waitSettled(ctx, p, timeout)
	}
	return p.view(), nil
}

// Stop stops a program and answers once it has.
func (s *Service) Stop(id string) (View, error) {
	p, err := s.find(id)
	if err != nil {
		return View{}, err
	}
	p.halt()
	return p.view(), nil
}

// Signal sends a signal to a running program's process group (or main
// process).
func (s *Service) Signal(id string, req SignalRequest) (View, error) {
	p, err := s.find(id)
	if err != nil {
		return View{}, err
	}
	sig, _ := proc.ParseSignal(req.Signal)
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid <= 0 {
		return View{}, &platform.Error{Code: platform.CodeConflict, Details: "state",
			Message: fmt.Sprintf("program %q has no running process (state %s)", id, p.status().State)}
	}
	if req.Group == nil || *req.Group {
		err = proc.KillGroup(pid, sig)
	} else {
		err = syscall.Kill(pid, sig)
	}
	if err != nil {
		return View{}, platform.Internal("send the signal", err)
	}
	s.journal(id, "info", "sent SIG"+proc.SignalName(sig), map[string]any{"pid": pid})
	return p.view(), nil
}
