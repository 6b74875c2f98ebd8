package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/notes"
	"deckhand/services/tunnel"
	"deckhand/services/vault"
)

// The tunnel's, the vault's and the notes' routes that are tools
// (tunnel_bindings, vault_get, vault_put, notes_list) read for a model as
// follows.
func init() {
	views["tunnel_bindings"] = view{answer: answerAs(func(s *Service, _ map[string]json.RawMessage, l tunnel.BindingList, _ int) *mcp.CallToolResult {
		var b strings.Builder
		for _, x := range l.Bindings {
			fmt.Fprintf(&b, "%d %s %s exposed=%v\n", x.Port, strings.Join(x.Addresses, ","), x.Program, x.Exposed)
		}
		if l.Bindings == nil {
			l.Bindings = []tunnel.Binding{}
		}
		return structuredResult(trimText(b.String(), 0, s.set.OutputBudget).Text, l)
	})}
	views["vault_get"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, r vault.Record, _ int) *mcp.CallToolResult {
		return structuredResult(string(r.Value), r)
	})}
	views["vault_put"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, r vault.Record, _ int) *mcp.CallToolResult {
		return structuredResult(fmt.Sprintf("stored %s (version %d)", r.Key, r.Version), r)
	})}
	views["notes_list"] = view{answer: answerAs(func(s *Service, _ map[string]json.RawMessage, l notes.NodeList, _ int) *mcp.CallToolResult {
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
		return structuredResult(trimText(b.String(), 0, s.set.OutputBudget).Text, l)
	})}
}
