package process

import (
	"context"
	"sort"
)

// List answers the processes kept, oldest first, filtered by tag and state.
func (s *Service) List(ctx context.Context, in ListInput) (ProcessList, error) {
	s.mu.Lock()
	all := make([]*process, 0, len(s.procs))
	for _, p := range s.procs {
		all = append(all, p)
	}
	s.mu.Unlock()
	out := ProcessList{Processes: []Process{}}
	for _, p := range all {
		<-p.started
		r := p.snapshot()
		if (in.Tag != "" && r.Tag != in.Tag) || (in.State != "" && r.State != in.State) {
			continue
		}
		out.Processes = append(out.Processes, r)
	}
	sort.Slice(out.Processes, func(i, j int) bool {
		a, b := out.Processes[i], out.Processes[j]
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.Before(b.StartedAt)
		}
		return a.ID < b.ID
	})
	return out, nil
}

// Get answers one process's record.
func (s *Service) Get(ctx context.Context, in IDInput) (Process, error) {
	p, err := s.get(in.ID)
	if err != nil {
		return Process{}, err
	}
	return p.snapshot(), nil
}
