package daemon

import (
	"context"
	"path/filepath"
	"reflect"
	"sort"
	"sync"

	"deckhand/platform/fault"
)

// Reloaded is the answer of POST /api/v1/daemon/reload.
type Reloaded struct {
	Programs int      `json:"programs" required:"true"`
	Added    []string `json:"added" required:"true" doc:"new programs (started when autostart)"`
	Changed  []string `json:"changed" required:"true" doc:"changed definitions (a supervised program restarts with its new one)"`
	Removed  []string `json:"removed" required:"true" doc:"programs whose file is gone (stopped and forgotten)"`
}

// Reload re-reads the program files, as `supervisorctl update` does. The
// whole directory is checked first: a file that does not load, an unknown
// dependency or a cycle answers 400 naming the file and field, and
// nothing changes.
func (s *Service) Reload(context.Context) (Reloaded, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	defs, problems, err := loadDir(s.dir)
	if err != nil {
		return Reloaded{}, fault.Internal("read the programs directory", err)
	}
	if len(problems) > 0 {
		pr := problems[0]
		details := filepath.Base(pr.path)
		if pr.field != "" {
			details += ": " + pr.field
		}
		return Reloaded{}, &fault.Error{Code: fault.CodeInvalid, Details: details, Message: pr.String()}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Reloaded{}, fault.Errorf(fault.CodeUnavailable, "the daemon service is stopping")
	}
	r := Reloaded{Programs: len(defs), Added: []string{}, Changed: []string{}, Removed: []string{}}
	var start, restart, stop []*program
	for id, def := range defs {
		p, ok := s.programs[id]
		switch {
		case !ok:
			p = newProgram(s, def)
			s.programs[id] = p
			r.Added = append(r.Added, id)
			if *def.Autostart {
				start = append(start, p)
			}
		case !reflect.DeepEqual(p.def, def):
			p.mu.Lock()
			p.def = def
			p.mu.Unlock()
			r.Changed = append(r.Changed, id)
			restart = append(restart, p)
		}
	}
	for id, p := range s.programs {
		if _, ok := defs[id]; !ok {
			delete(s.programs, id)
			r.Removed = append(r.Removed, id)
			stop = append(stop, p)
		}
	}
	s.problems = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range stop {
		wg.Go(p.halt)
	}
	for _, p := range restart {
		if p.supervised() {
			wg.Go(func() { p.halt(); p.start() })
		}
	}
	wg.Wait()
	for _, p := range start {
		p.start()
	}
	for _, l := range [][]string{r.Added, r.Changed, r.Removed} {
		sort.Strings(l)
	}
	s.journal("daemon", "info", "program files reloaded", map[string]any{"added": r.Added, "changed": r.Changed, "removed": r.Removed})
	return r, nil
}
