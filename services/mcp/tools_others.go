package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/fault"
	"deckhand/services/tunnel"
	"deckhand/services/vault"
)

// Listening is one listening TCP port.
type Listening struct {
	Port      int      `json:"port"`
	Addresses []string `json:"addresses"`
	PID       int      `json:"pid,omitempty"`
	Program   string   `json:"program,omitempty"`
	Exposed   bool     `json:"exposed" jsonschema:"the gateway's tunnel and proxy forward to it"`
	Reason    string   `json:"reason,omitempty" jsonschema:"why it is not exposed"`
}

// BindingsResult answers tunnel_bindings.
type BindingsResult struct {
	Bindings []Listening `json:"bindings"`
}

// VaultKeyArgs name a vault key.
type VaultKeyArgs struct {
	Key string `json:"key" jsonschema:"the key's name"`
}

// VaultPutArgs are vault_put's arguments.
type VaultPutArgs struct {
	Key        string `json:"key" jsonschema:"the key's name"`
	Value      any    `json:"value" jsonschema:"any JSON value (a string, number, object ...)"`
	TTLSeconds *int64 `json:"ttl_seconds,omitempty" jsonschema:"seconds until the key expires (default: never)"`
}

// VaultValue answers vault_get and vault_put.
type VaultValue struct {
	Key     string `json:"key"`
	Value   any    `json:"value,omitempty" jsonschema:"the stored value (vault_get)"`
	Version int64  `json:"version"`
}

func (s *Service) addOtherTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.server, &mcp.Tool{Name: "tunnel_bindings", Title: "Listening ports",
		Description: "The TCP ports listening in the container: addresses, the listening program when visible, and whether " +
			"the agent's tunnel and proxy forward to it (a web app started with process_start shows here once it listens).",
		Annotations: ro}, s.tunnelBindings)
	mcp.AddTool(s.server, &mcp.Tool{Name: "vault_get", Title: "Read a vault key",
		Description: "Read a value from the container's vault (encrypted key-value store). Values may be secrets: do not " +
			"repeat them where they need not go.", Annotations: ro,
		InputSchema: mustSchema[VaultKeyArgs](), OutputSchema: mustSchema[VaultValue]()}, s.vaultGet)
	mcp.AddTool(s.server, &mcp.Tool{Name: "vault_put", Title: "Write a vault key",
		Description: "Store a JSON value under a key in the container's vault, replacing any value; ttl_seconds makes it expire.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
		InputSchema: mustSchema[VaultPutArgs](), OutputSchema: mustSchema[VaultValue]()}, s.vaultPut)
	s.addNotesListTool()
}

func (s *Service) tunnelBindings(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, BindingsResult, error) {
	var l tunnel.BindingList
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "tunnel", path: "/api/v1/tunnel/bindings"}, &l); err != nil {
		return nil, BindingsResult{}, toolErr(err)
	}
	out := BindingsResult{Bindings: []Listening{}}
	var b strings.Builder
	for _, x := range l.Bindings {
		out.Bindings = append(out.Bindings, Listening{Port: x.Port, Addresses: x.Addresses, PID: x.PID, Program: x.Program,
			Exposed: x.Exposed, Reason: x.Reason})
		fmt.Fprintf(&b, "%d %s %s exposed=%v\n", x.Port, strings.Join(x.Addresses, ","), x.Program, x.Exposed)
	}
	return textResult(trimText(b.String(), 0, s.set.OutputBudget).Text), out, nil
}

func vaultPath(key string) string { return "/api/v1/vault/keys/" + url.PathEscape(key) }

func (s *Service) vaultGet(ctx context.Context, req *mcp.CallToolRequest, in VaultKeyArgs) (*mcp.CallToolResult, VaultValue, error) {
	var r vault.Record
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "vault", path: vaultPath(in.Key)}, &r); err != nil {
		return nil, VaultValue{}, toolErr(err)
	}
	var v any
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return nil, VaultValue{}, toolErr(err)
	}
	return textResult(string(r.Value)), VaultValue{Key: r.Key, Value: v, Version: r.Version}, nil
}

func (s *Service) vaultPut(ctx context.Context, req *mcp.CallToolRequest, in VaultPutArgs) (*mcp.CallToolResult, VaultValue, error) {
	raw, err := json.Marshal(in.Value)
	if err != nil || in.Value == nil {
		return nil, VaultValue{}, toolErr(fault.Invalid("value", "must be a JSON value"))
	}
	var r vault.Record
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPut, service: "vault", path: vaultPath(in.Key),
		body: vault.Write{Value: raw, TTLSeconds: in.TTLSeconds}}, &r); err != nil {
		return nil, VaultValue{}, toolErr(err)
	}
	return textResult(fmt.Sprintf("stored %s (version %d)", r.Key, r.Version)), VaultValue{Key: r.Key, Version: r.Version}, nil
}

// mustSchema is T's inferred JSON Schema with its field "value" (Go type
// any) as a schema that admits any value and says so: inferred, and when
// empty, it is the boolean schema true, which some clients (the
// TypeScript SDK) refuse in a tool's schema.
func mustSchema[T any]() *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	if p, ok := sc.Properties["value"]; ok && p != nil {
		sc.Properties["value"] = &jsonschema.Schema{Description: "any JSON value: " + p.Description}
	}
	return sc
}
