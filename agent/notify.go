package agent

import (
	"log/slog"
	"os"
	"path/filepath"

	"deckhand/platform/contract"
	"deckhand/services/notifications"
)

// The agent's notifier is a notifications.Relay: every event is logged as
// before and delivered to the notifications service — directly when that
// service runs in the agent's process (it attaches itself to the relay its
// deps carry), over its loopback ingest route when it runs as a child.
// Isolated children of other services get the route's URL in
// notifications.IngestURLEnv and make their own relay.

// newNotifier is the supervisor's default notifier.
func newNotifier(log *slog.Logger) contract.Notifier { return notifications.NewRelay(log) }

// wireNotifier forwards the relay to an isolated notifications service.
func (s *Supervisor) wireNotifier() {
	r, ok := s.cfg.Notifier.(*notifications.Relay)
	if u := s.unit("notifications"); ok && u != nil && u.mode == ModeChild {
		r.Forward("http://"+u.addr, filepath.Join(s.cfg.Data, "notifications"))
	}
}

// notifyEnv is what a child needs to reach the notifications service.
func (s *Supervisor) notifyEnv() []string {
	if u := s.unit("notifications"); u != nil {
		return []string{notifications.IngestURLEnv + "=http://" + u.addr}
	}
	return nil
}

// childNotifier is the notifier of `deckhand service NAME`: a relay that
// forwards to the agent's notifications service when the agent said where
// it is, else one that only logs (or that the notifications service, when
// NAME is that, attaches itself to).
func childNotifier(log *slog.Logger, data, name string) contract.Notifier {
	r := notifications.NewRelay(log)
	if url := os.Getenv(notifications.IngestURLEnv); url != "" && name != "notifications" {
		r.Forward(url, filepath.Join(data, "notifications"))
	}
	return r
}
