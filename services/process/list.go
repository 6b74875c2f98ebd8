package process

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
)

// List answers the processes kept, oldest first, filtered by tag and state.
func (s *Service) List(ctx context.Context, in ListInput) (ProcessList, error) {
	s.mu.Lock()
	all := slices.Collect(maps.Values(s.procs))
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
	slices.SortFunc(out.Processes, func(a, b Process) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), strings.Compare(a.ID, b.ID))
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
