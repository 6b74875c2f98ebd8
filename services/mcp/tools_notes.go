package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/notes"
)

// NoteListArgs are notes_list's arguments.
type NoteListArgs struct {
	Notebook string `json:"notebook,omitempty" jsonschema:"only this notebook's notes (its id); all notebooks when left out"`
	After    string `json:"after,omitempty" jsonschema:"the next of the previous call, notebook/node: list the notes after it"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many notes, 1-1000 (default 100)"`
}

func (s *Service) addNotesListTool() {
	mcp.AddTool(s.server, &mcp.Tool{Name: "notes_list", Title: "List notes",
		Description: "List the notes (notebook nodes with a document) in notebook, then node order: each one's notebook, " +
			"node, title, version and number of blocks, not the content (notes_read reads one). Give notebook to list one " +
			"notebook. When next is set, more follow: call again with after set to it.",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		InputSchema:  mustSchema[NoteListArgs](),
		OutputSchema: mustSchema[notes.NodeList]()}, s.notesList)
}

func (s *Service) notesList(ctx context.Context, req *mcp.CallToolRequest, in NoteListArgs) (*mcp.CallToolResult, notes.NodeList, error) {
	q := url.Values{}
	if in.Notebook != "" {
		q.Set("notebook", in.Notebook)
	}
	if in.After != "" {
		q.Set("after", in.After)
	}
	if in.Limit != 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	var l notes.NodeList
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "notes", path: "/api/v1/notes", query: q}, &l); err != nil {
		return nil, notes.NodeList{}, toolErr(err)
	}
	var b strings.Builder
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, "%s/%s %q version %d, %d blocks\n", n.NotebookID, n.NodeID, n.Title, n.Version, n.Blocks)
	}
	if len(l.Nodes) == 0 {
		b.WriteString("no notes\n")
	}
	if l.Next != "" {
		fmt.Fprintf(&b, "more follow: call again with after=%s\n", l.Next)
	}
	return textResult(trimText(b.String(), 0, s.set.OutputBudget).Text), l, nil
}
