package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/notes"
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

// notes_read reads as the document's text (the other notes tools by
// their routes' Text).
func init() {
	views["notes_read"] = view{budget: true, answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, d notes.Document, max int) *mcp.CallToolResult {
		return structuredResult(trimText(render(d), 0, max).Text, d)
	})}
}
