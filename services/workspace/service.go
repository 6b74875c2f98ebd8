// Package workspace owns the workspace service (port +10): per-workspace
// memory for the AI agents and people working in the container (memory
// blocks with a change history, a journal searched with BM25 over an
// inverted index kept in the service's own bbolt store) and the workspace
// configuration (a JSON document checked against its schema, model
// providers whose keys are sealed at rest and never answered, MCP servers,
// skills, tools, the project link, permissions and pending questions).
package workspace

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// Service is the workspace service.
type Service struct {
	db     *store.DB
	log    *slog.Logger
	clock  clockpkg.Clock
	sealer *secrets.Sealer
	// env reads the service's environment (provider keys such as
	// OPENAI_API_KEY count as connected); tests replace it.
	env func(string) string
}

// New opens the service on its own store. Provider keys are sealed with a
// key kept in <data>/workspace/secrets.key (created 0600 on first start),
// never inside the store, so a copy of store.db alone opens no key.
func New(deps contract.ServiceDeps, _ *contract.NoSettings) (*Service, error) {
	if deps.DataDir == "" || deps.Store == nil {
		return nil, errors.New("workspace: no data directory or store")
	}
	deps = deps.WithDefaults()
	key, _, err := secrets.LoadOrCreate(filepath.Join(deps.DataDir, "secrets.key"))
	if err != nil {
		return nil, err
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return nil, err
	}
	if err := declareTables(context.Background(), deps.Store); err != nil {
		return nil, err
	}
	return &Service{db: deps.Store, log: deps.Logger, clock: deps.Clock, sealer: sealer, env: os.Getenv}, nil
}

// SetEnv replaces how the service reads its environment (tests).
func (s *Service) SetEnv(f func(string) string) { s.env = f }

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "workspace",
		Title:   "deckhand workspace memory and configuration",
		Version: platform.Version,
		Description: "Per-workspace memory and configuration for the AI agents and people working in the container, under " +
			"/api/v1/workspaces/{workspaceID}. A workspaceID is 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit; a " +
			"workspace exists once something is written to it (reads of an empty workspace answer empty lists and the default " +
			"configuration). Memory blocks (label, value, description, character limit) are always-in-context notes; every " +
			"create, update and delete is kept in the memory history with the block before and after. The memory journal is " +
			"an append-only log of entries searched with BM25 (k1 and b from the memory configuration) over an inverted index " +
			"in the service's store: text is NFKC-normalised, lower-cased and split on anything that is not a letter or digit; " +
			"no stemming and no stop words. The configuration is one JSON document checked against its schema (the request " +
			"body schema of PATCH /config) and changed with JSON merge patches (RFC 7396): a null removes a member. Provider " +
			"API keys are sealed (AES-256-GCM) at rest with a key outside the store and never appear in any answer or log: " +
			"answers say api_key_set. MCP server environment values and headers are sealed the same way and answered as " +
			"names only. Errors are {\"code\",\"details\",\"message\"}: 400 INVALID names the field, 404 NOT_FOUND an unknown " +
			"label, id or name.",
	}
}

var (
	idRule    = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	labelRule = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// checkWorkspace validates a workspaceID path parameter.
func checkWorkspace(id string) error {
	if !idRule.MatchString(id) {
		return fault.Invalid("workspaceID", "must be 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit, got %q", id)
	}
	return nil
}

// prefix is the key prefix of a workspace's records in every bucket.
func prefix(ws string) string { return ws + "/" }
