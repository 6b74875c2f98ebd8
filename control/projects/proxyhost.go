package projects

import (
	"context"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// ContainerByHost finds the container a per-service Host names: prefix is
// `<project_id>-<container_id>` and server the server name. Ids may hold
// hyphens, so each split is tried; only a container of that project whose
// server is server matches. Unknown and deleted containers are NotFound.
func (s *Service) ContainerByHost(ctx context.Context, prefix, server string) (*Container, error) {
	found, err := domain.Transact(ctx, s.db.ViewContext, "find the container", func(tx *store.Tx) ([]*Container, error) {
		var found []*Container
		for i := strings.IndexByte(prefix, '-'); i > 0 && i < len(prefix)-1; {
			c, err := getContainer(tx, prefix[i+1:])
			if err != nil {
				return nil, err
			}
			// The server's name is looked up after the read.
			if c != nil && c.ProjectID == prefix[:i] {
				found = append(found, c)
			}
			j := strings.IndexByte(prefix[i+1:], '-')
			if j < 0 {
				break
			}
			i += j + 1
		}
		return found, nil
	})
	if err != nil {
		return nil, err
	}
	var out *Container
	for _, c := range found {
		if s.serverName(c) == server {
			out = c
			break
		}
	}
	if out == nil {
		return nil, fault.NotFound("container", prefix)
	}
	return s.decorate(out), nil
}

// WakeContainer starts a stopped (or resumes a paused) container for a
// request that reached it through the platform proxy: it needs no caller,
// since the container's autostart is the owner's consent, and it returns
// at once; the start goes on in the background.
func (s *Service) WakeContainer(ctx context.Context, id string) error {
	c, err := s.current(ctx, id)
	if err != nil {
		return err
	}
	if !c.Autostart {
		return fault.Errorf(fault.CodeConflict, "container %s has autostart off: start it yourself", id)
	}
	s.background(id, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, s.lc.rt.EnrollTimeout+30*time.Second)
		defer cancel()
		_, _ = s.StartContainer(ctx, ContainerAction{ContainerRef: ContainerRef{ID: id}})
	})
	return nil
}
