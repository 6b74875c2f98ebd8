package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/notes"
	"deckhand/services/workspace"
)

// NoteRef names a note: a node of a notebook.
type NoteRef struct {
	Notebook string `json:"notebook" jsonschema:"the notebook's id: 1-64 of A-Z a-z 0-9 _ -"`
	Node     string `json:"node" jsonschema:"the node's id in the notebook: 1-64 of A-Z a-z 0-9 _ -"`
}

// NoteBlock is one typed block of a note; only type is required (the
// notes service's own Block makes the client send every field).
type NoteBlock struct {
	ID       string   `json:"id,omitempty" jsonschema:"1-64 of A-Z a-z 0-9 _ -, unique in the note"`
	Type     string   `json:"type" jsonschema:"text, heading, list, quote, code, math, diagram or divider"`
	Text     string   `json:"text,omitempty" jsonschema:"text, heading, quote: the text; code: the source; math: TeX; diagram: its statements"`
	Level    int      `json:"level,omitempty" jsonschema:"heading: 1-6"`
	Language string   `json:"language,omitempty" jsonschema:"code: the language"`
	Items    []string `json:"items,omitempty" jsonschema:"list: the items"`
	Ordered  bool     `json:"ordered,omitempty" jsonschema:"list: numbered"`
}

// NoteReadArgs are notes_read's arguments.
type NoteReadArgs struct {
	NoteRef
	MaxChars int `json:"max_chars,omitempty" jsonschema:"trim the text rendering to this many characters"`
}

// NoteWriteArgs are notes_write's arguments.
type NoteWriteArgs struct {
	NoteRef
	Title   string      `json:"title,omitempty" jsonschema:"up to 256 characters"`
	Blocks  []NoteBlock `json:"blocks" jsonschema:"the whole document: typed blocks (text, heading with level, list with items, quote, code with language, math, diagram, divider), each with a unique id"`
	Version *int64      `json:"version,omitempty" jsonschema:"the version being replaced, from notes_read; 0 creates only; required to replace an existing note"`
}

func (s *Service) addMemoryTools() {
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	write := &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.server, &mcp.Tool{Name: "notes_read", Title: "Read a note",
		Description: "Read a note (a notebook node's document): its title, version and typed blocks, with a text rendering.",
		Annotations: read}, s.notesRead)
	mcp.AddTool(s.server, &mcp.Tool{Name: "notes_write", Title: "Write a note",
		Description: "Create or replace a note's whole document. Replacing needs the version notes_read answered (a " +
			"stale one is refused: read again and redo the change); version 0 creates only.", Annotations: write}, s.notesWrite)
}

// required refuses an empty path argument before it reaches a route.
func required(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			return fmt.Errorf("%s is required", fields[i])
		}
	}
	return nil
}

func notePath(r NoteRef) string {
	return "/api/v1/notes/notebooks/" + url.PathEscape(r.Notebook) + "/nodes/" + url.PathEscape(r.Node) + "/document"
}

// render is a document as plain text: the title, then one paragraph a
// block.
func render(d notes.Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (version %d)\n", d.Title, d.Version)
	for _, bl := range d.Blocks {
		b.WriteString("\n")
		switch bl.Type {
		case "heading":
			fmt.Fprintf(&b, "%s %s\n", strings.Repeat("#", max(bl.Level, 1)+1), bl.Text)
		case "list":
			for i, it := range bl.Items {
				if bl.Ordered {
					fmt.Fprintf(&b, "%d. %s\n", i+1, it)
				} else {
					fmt.Fprintf(&b, "- %s\n", it)
				}
			}
		case "code":
			fmt.Fprintf(&b, "```%s\n%s\n```\n", bl.Language, bl.Text)
		case "divider":
			b.WriteString("---\n")
		default:
			b.WriteString(bl.Text + "\n")
		}
	}
	return b.String()
}

func (s *Service) notesRead(ctx context.Context, req *mcp.CallToolRequest, in NoteReadArgs) (*mcp.CallToolResult, notes.Document, error) {
	if err := required("notebook", in.Notebook, "node", in.Node); err != nil {
		return nil, notes.Document{}, err
	}
	var d notes.Document
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "notes", path: notePath(in.NoteRef)}, &d); err != nil {
		return nil, notes.Document{}, toolErr(err)
	}
	return textResult(trimText(render(d), 0, s.budget(in.MaxChars)).Text), d, nil
}

func (s *Service) notesWrite(ctx context.Context, req *mcp.CallToolRequest, in NoteWriteArgs) (*mcp.CallToolResult, notes.Document, error) {
	if err := required("notebook", in.Notebook, "node", in.Node); err != nil {
		return nil, notes.Document{}, err
	}
	blocks := make([]notes.Block, len(in.Blocks))
	for i, b := range in.Blocks {
		blocks[i] = notes.Block(b)
	}
	var d notes.Document
	body := notes.PutDocument{Title: in.Title, Blocks: blocks, Version: in.Version}
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPut, service: "notes", path: notePath(in.NoteRef), body: body}, &d); err != nil {
		return nil, notes.Document{}, toolErr(err)
	}
	return textResult(fmt.Sprintf("wrote %s/%s: %d blocks, version %d", d.NotebookID, d.NodeID, len(d.Blocks), d.Version)), d, nil
}

// The workspace's memory routes that are tools (workspace_memory_list,
// workspace_memory_read, workspace_memory_write) read for a model as
// follows.
func init() {
	views["workspace_memory_list"] = view{answer: answerAs(func(s *Service, _ map[string]json.RawMessage, l workspace.BlockList, _ int) *mcp.CallToolResult {
		var b strings.Builder
		for _, bl := range l.Blocks {
			fmt.Fprintf(&b, "%s (%d/%d characters, version %d): %s\n", bl.Label, len([]rune(bl.Value)), bl.Limit, bl.Version, bl.Description)
		}
		if len(l.Blocks) == 0 {
			b.WriteString("no memory blocks")
			l.Blocks = []workspace.Block{}
		}
		return structuredResult(trimText(b.String(), 0, s.set.OutputBudget).Text, l)
	})}
	views["workspace_memory_read"] = view{answer: answerAs(func(s *Service, _ map[string]json.RawMessage, bl workspace.Block, _ int) *mcp.CallToolResult {
		return structuredResult(trimText(bl.Value, 0, s.set.OutputBudget).Text, bl)
	})}
	views["workspace_memory_write"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, bl workspace.Block, _ int) *mcp.CallToolResult {
		return structuredResult(fmt.Sprintf("wrote %s: version %d", bl.Label, bl.Version), bl)
	})}
}
