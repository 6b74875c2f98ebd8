package server

import "deckhand/control/eventlog"

// eventlogConfig maps the serve flags onto the event log's config section.
func (s *Server) eventlogConfig() (eventlog.Config, error) {
	return eventlog.Config{RetentionDays: s.cfg.EventRetentionDays}, nil
}
