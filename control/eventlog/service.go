// Package eventlog is the control plane's event-log domain (docs/spec/interface.md
// 4.11): the read side of control/events (list with every filter, one
// event, stats), deletion (cleanup by age, by filter, one event), the
// ingest route through which agents and admins report the kinds the
// control plane does not produce itself, and the retention job.
//
// Who sees what: an admin every event; a user the events they own
// (Event.UserID) or caused (Event.ActorID), and the events of projects the
// projects domain's "project.member" check admits them to (looked up at
// request time; without a projects domain only their own). Deletion is
// admins' only: the log is an audit record.
package eventlog

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform/auth"
)

// Config is the domain's section of the serve flags.
type Config struct {
	// RetentionDays deletes events older than this many days in the
	// background (--event-retention-days); 0 keeps every event.
	RetentionDays int
	// RetentionEvery is how often the retention job runs (default 1 h).
	RetentionEvery time.Duration
}

// Checks other domains provide that widen what a caller may see or report.
const (
	CheckProjectMember   = "project.member"
	CheckContainerAccess = "container.access"
)

// Service is the event-log domain.
type Service struct {
	env  domain.Env[Config]
	stop context.CancelFunc
	done chan struct{}
}

// New builds the domain and starts the retention job when configured.
func New(env domain.Env[Config]) (*Service, error) {
	if err := env.Events.Declare(context.Background()); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	s := &Service{env: env, done: make(chan struct{})}
	if env.Config.RetentionEvery <= 0 {
		s.env.Config.RetentionEvery = time.Hour
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	if env.Config.RetentionDays > 0 {
		go s.retain(ctx)
	} else {
		close(s.done)
	}
	return s, nil
}

// Close stops the retention job and waits for it.
func (s *Service) Close() error {
	s.stop()
	<-s.done
	return nil
}

// retain applies the configured retention at start and then every
// RetentionEvery, in batches (events.DeleteBatchSize per transaction) so
// writers are never held for long.
func (s *Service) retain(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.env.Config.RetentionEvery)
	defer t.Stop()
	for {
		n, err := s.env.Events.Expire(ctx, s.env.Config.RetentionDays)
		switch {
		case err != nil && ctx.Err() == nil:
			s.env.Logger.Warn("event retention failed", "err", err, "deleted", n)
		case n > 0:
			s.env.Logger.Info("event retention", "deleted", n, "days", s.env.Config.RetentionDays)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// viewer is the caller's view of the log.
func (s *Service) viewer(ctx context.Context, p *auth.Principal) *events.Viewer {
	if p.IsAdmin() {
		return &events.Viewer{All: true}
	}
	v := &events.Viewer{UserID: p.UserID}
	if check := s.env.Authz.Lookup(CheckProjectMember); check != nil {
		v.Project = func(id string) bool {
			return check(ctx, params(map[string]string{"project": id})) == nil
		}
	}
	return v
}

// params answers a resource check's path-parameter lookups: whatever name
// a check reads its project or container id under ({id}, {project_id},
// {projectId} ...), it gets the id given here.
func params(ids map[string]string) func(string) string {
	return func(name string) string {
		switch name {
		case "project_id", "projectId", "projectID":
			return ids["project"]
		case "container_id", "containerId", "containerID":
			return ids["container"]
		case "id":
			return cmp.Or(ids["container"], ids["project"])
		}
		return ""
	}
}

// Bootstrap drops the hand-built index of an earlier layout and moves
// events of the first, unindexed layout into the table's (nothing to do
// on a store that never had them).
func (s *Service) Bootstrap(ctx context.Context) error {
	if dropped, err := s.env.Events.DropLegacyIndex(ctx); err != nil {
		return fmt.Errorf("events: drop the earlier index: %w", err)
	} else if dropped {
		s.env.Logger.Info("events: the earlier hand-built index was dropped; the declared table's indexes serve lists")
	}
	n, err := s.env.Events.MigrateKeys(ctx)
	if err != nil {
		return fmt.Errorf("events: index the existing log: %w", err)
	}
	if n > 0 {
		s.env.Logger.Info("events indexed", "moved", n)
	}
	return nil
}
