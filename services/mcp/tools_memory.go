package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/notes"
	"deckhand/services/workspace"
)

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

// The notes routes that are tools (notes_read, notes_write) read for a
// model as follows.
func init() {
	views["notes_read"] = view{budget: true, answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, d notes.Document, max int) *mcp.CallToolResult {
		return structuredResult(trimText(render(d), 0, max).Text, d)
	})}
	views["notes_write"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, d notes.Document, _ int) *mcp.CallToolResult {
		return structuredResult(fmt.Sprintf("wrote %s/%s: %d blocks, version %d", d.NotebookID, d.NodeID, len(d.Blocks), d.Version), d)
	})}
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
