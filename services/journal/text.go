package journal

import "context"

// TextRequest is GET /api/v1/journal/text.
type TextRequest struct {
	Source string `query:"source" doc:"only entries of these sources (comma list: agent, gateway, process, mcp, cron ...)"`
	Level  string `query:"level" enum:"debug,info,warn,error" doc:"only this level and more severe ones"`
	Since  string `query:"since" doc:"only entries at or after: RFC 3339 time or a duration back from now (-15m, 2h)"`
	Text   string `query:"text" doc:"only messages containing this (case-insensitive)"`
	Limit  int    `query:"limit" minimum:"0" maximum:"1000" doc:"the newest this many entries (default 50, at most 1000)"`
}

// ShortText is entries in journalctl's short format.
type ShortText struct {
	Text string `json:"text" required:"true" doc:"the entries in journalctl's short format, oldest first"`
}

// ReadText answers the newest matching entries as short text lines,
// oldest first.
func (s *Service) ReadText(_ context.Context, in TextRequest) (ShortText, error) {
	q, err := s.queryOf(ReadRequest{Source: in.Source, Level: in.Level, Since: in.Since, Text: in.Text, Limit: in.Limit})
	if err != nil {
		return ShortText{}, err
	}
	if q.Limit <= 0 {
		q.Limit = 50
	}
	page, err := s.Read(q)
	if err != nil {
		return ShortText{}, err
	}
	var buf []byte
	for _, e := range page.Entries {
		buf = shortLine(buf, e)
	}
	return ShortText{Text: string(buf)}, nil
}
