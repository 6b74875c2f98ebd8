package mcp

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/services/vault"
)

// vault_get reads as the stored JSON value itself (the vault's other
// tools, the tunnel's and the notes list by their routes' Text).
func init() {
	views["vault_get"] = view{answer: answerAs(func(_ *Service, _ map[string]json.RawMessage, r vault.Record, _ int) *mcp.CallToolResult {
		return structuredResult(string(r.Value), r)
	})}
}
