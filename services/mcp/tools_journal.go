package mcp

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/journal"
)

// JournalResult answers journal_query.
type JournalResult struct {
	Text       string `json:"text" jsonschema:"the entries in journalctl's short format, oldest first"`
	NextOffset int    `json:"next_offset,omitempty"`
}

// The journal's text route is journal_query: its text trimmed to
// max_chars from offset.
func init() {
	views["journal_query"] = view{budget: true, offset: true, answer: answerAs(func(_ *Service, args map[string]json.RawMessage, t journal.ShortText, max int) *mcp.CallToolResult {
		pg := trimText(t.Text, argInt(args, "offset"), max)
		return structuredResult(pg.Text, JournalResult{Text: pg.Text, NextOffset: pg.Next})
	})}
}
