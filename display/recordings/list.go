package recordings

import (
	"context"
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// RecordingList is the recordings as an object.
type RecordingList struct {
	Recordings []Recording `json:"recordings" required:"true"`
}

// listRoute is GET .../recordings/list, the display_recordings tool.
func (s *Service) listRoute() platform.Route {
	r := core.Route(http.MethodGet, "/recordings/list", "getRecordingList", "List recordings as an object",
		"What GET recordings answers, newest first, as {\"recordings\": [...]}: for a client that takes only an object "+
			"(an MCP tool).", platform.ReadOp(s.RecordingList))
	r.Tool = &platform.Tool{Name: "display_recordings", Title: "List recordings",
		Description: "The screen recordings, newest first: status, size, how many actions each timeline holds.",
		Text: "{{range .recordings}}{{.id}} {{.status}} {{.format}}, {{.bytes}} bytes, {{.events}} actions, " +
			"started {{.started_at}}\n{{end}}",
		ReadOnly: true, Idempotent: true}
	return r
}

// RecordingList answers the recordings, newest first, as an object.
func (s *Service) RecordingList(ctx context.Context) (RecordingList, error) {
	recs, err := s.Recordings(ctx)
	return RecordingList{Recordings: recs}, err
}
