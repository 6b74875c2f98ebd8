package mcp

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JournalArgs are journal_query's arguments.
type JournalArgs struct {
	Source   string `json:"source,omitempty" jsonschema:"only entries of these sources (comma list: agent, gateway, process, mcp, cron ...)"`
	Level    string `json:"level,omitempty" jsonschema:"only this level and more severe: debug, info, warn or error"`
	Since    string `json:"since,omitempty" jsonschema:"only entries at or after: RFC 3339 time or a duration back from now (-15m, 2h)"`
	Text     string `json:"text,omitempty" jsonschema:"only messages containing this (case-insensitive)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"the newest this many entries (default 50, at most 1000)"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"characters to answer at most (default: the server's budget)"`
	Offset   int    `json:"offset,omitempty" jsonschema:"character to start at (from a trimmed answer's marker)"`
}

// JournalResult answers journal_query.
type JournalResult struct {
	Text       string `json:"text" jsonschema:"the entries in journalctl's short format, oldest first"`
	NextOffset int    `json:"next_offset,omitempty"`
}

func (s *Service) addJournalTools() {
	mcp.AddTool(s.server, &mcp.Tool{Name: "journal_query", Title: "Read the journal",
		Description: "Read the container agent's journal (its own events, the gateway's decisions, programs' output, " +
			"this server's tool calls): the newest entries matching the filters, oldest first, as short text lines.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, s.journalQuery)
}

// journalText reads the journal's short text.
func (s *Service) journalText(ctx context.Context, who caller, in JournalArgs) (string, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 50
	}
	q := url.Values{"format": {"short"}, "limit": {strconv.Itoa(min(limit, 1000))}}
	for k, v := range map[string]string{"source": in.Source, "level": in.Level, "since": in.Since, "text": in.Text} {
		if v != "" {
			q.Set(k, v)
		}
	}
	raw, _, err := s.be.bytes(ctx, who, call{method: http.MethodGet, service: "journal", path: "/api/v1/journal", query: q}, maxRead)
	return string(raw), err
}

func (s *Service) journalQuery(ctx context.Context, req *mcp.CallToolRequest, in JournalArgs) (*mcp.CallToolResult, JournalResult, error) {
	text, err := s.journalText(ctx, callerOf(req.Extra), in)
	if err != nil {
		return nil, JournalResult{}, toolErr(err)
	}
	pg := trimText(text, in.Offset, s.budget(in.MaxChars))
	return textResult(pg.Text), JournalResult{Text: pg.Text, NextOffset: pg.Next}, nil
}
