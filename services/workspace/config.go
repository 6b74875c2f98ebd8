package workspace

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/store"
)

const bucketConfig = "config" // ws → storedConfig

// Config is the workspace configuration document. Its JSON schema is this
// type's (the request body of PATCH .../config in the OpenAPI document),
// and Validate holds the rules a schema states beside the shape (enums,
// ranges, patterns), each error naming the field by its JSON path.
type Config struct {
	Model        string                    `json:"model" doc:"default model as provider/model, e.g. anthropic/claude-sonnet-4; the provider must be configured"`
	SmallModel   string                    `json:"small_model" doc:"model for small tasks (titles, summaries), provider/model"`
	Instructions []string                  `json:"instructions" doc:"files or glob patterns of instructions every agent reads (up to 32)"`
	Providers    map[string]ProviderConfig `json:"providers" doc:"model providers by id (1-64 of a-z 0-9 - _)"`
	Permission   Permission                `json:"permission"`
	Tools        map[string]bool           `json:"tools" doc:"tool name → enabled; tools not listed are enabled"`
	Memory       MemoryConfig              `json:"memory"`
	Project      *ProjectLink              `json:"project" doc:"read-only here: set with PATCH .../project/{projectID}"`
}

// ProviderConfig configures one model provider. api_key is accepted in
// PATCH bodies and never answered: answers carry api_key_set.
type ProviderConfig struct {
	Type      string   `json:"type" required:"true" enum:"openai,anthropic,google,mistral,groq,openrouter,ollama,openai-compatible"`
	Name      string   `json:"name" doc:"display name"`
	BaseURL   string   `json:"base_url" doc:"http(s) URL; required for openai-compatible"`
	APIKey    string   `json:"api_key,omitempty" doc:"write-only: sealed at rest, never answered; omit in a patch to keep the stored key, null to remove it"`
	APIKeySet bool     `json:"api_key_set" doc:"read-only: a key is stored"`
	Models    []string `json:"models" doc:"model ids offered by this provider"`
}

// Permission says what agents may do without asking.
type Permission struct {
	Edit     string `json:"edit" enum:"allow,ask,deny" doc:"editing files (default ask)"`
	Bash     string `json:"bash" enum:"allow,ask,deny" doc:"running commands (default ask)"`
	WebFetch string `json:"webfetch" enum:"allow,ask,deny" doc:"fetching URLs (default allow)"`
	MCP      string `json:"mcp" enum:"allow,ask,deny" doc:"calling MCP tools (default ask)"`
}

// MemoryConfig bounds the workspace memory and tunes its search.
type MemoryConfig struct {
	DefaultBlockLimit int          `json:"default_block_limit" doc:"limit of a block created without one, 1-max_block_limit (default 5000)"`
	MaxBlockLimit     int          `json:"max_block_limit" doc:"largest limit a block may have, 1-1000000 (default 100000)"`
	MaxBlocks         int          `json:"max_blocks" doc:"most blocks in a workspace, 1-10000 (default 100)"`
	MaxEntryChars     int          `json:"max_entry_chars" doc:"longest journal entry, 1-1000000 characters (default 20000)"`
	Search            SearchConfig `json:"search"`
}

// SearchConfig holds the BM25 parameters.
type SearchConfig struct {
	K1 float64 `json:"k1" doc:"term frequency saturation, 0-3 (default 1.2)"`
	B  float64 `json:"b" doc:"length normalisation, 0-1 (default 0.75)"`
}

// ProjectLink ties the workspace to a control-plane project.
type ProjectLink struct {
	ID        string    `json:"id" required:"true"`
	Name      string    `json:"name"`
	Directory string    `json:"directory" doc:"absolute directory of the project's files in the container"`
	LinkedAt  time.Time `json:"linked_at" required:"true"`
}

// storedConfig is the record: the document (keys blanked) and the sealed
// provider keys by provider id.
type storedConfig struct {
	Config  Config            `json:"config"`
	Secrets map[string]string `json:"secrets,omitempty"`
	Version int64             `json:"version"`
}

// ConfigView is the answer of GET and PATCH .../config.
type ConfigView struct {
	Config
	Version int64 `json:"version" required:"true" doc:"0 until the first change, +1 on every change"`
}

// defaults fills what the document leaves out.
func (c *Config) defaults() {
	if c.Providers == nil {
		c.Providers = map[string]ProviderConfig{}
	}
	if c.Tools == nil {
		c.Tools = map[string]bool{}
	}
	if c.Instructions == nil {
		c.Instructions = []string{}
	}
	p := &c.Permission
	for _, f := range []struct {
		v   *string
		def string
	}{{&p.Edit, "ask"}, {&p.Bash, "ask"}, {&p.WebFetch, "allow"}, {&p.MCP, "ask"}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	m := &c.Memory
	m.MaxBlockLimit = cmp.Or(m.MaxBlockLimit, 100000)
	m.DefaultBlockLimit = cmp.Or(m.DefaultBlockLimit, min(5000, m.MaxBlockLimit))
	m.MaxBlocks = cmp.Or(m.MaxBlocks, 100)
	m.MaxEntryChars = cmp.Or(m.MaxEntryChars, 20000)
	if m.Search.K1 == 0 && m.Search.B == 0 {
		m.Search = SearchConfig{K1: 1.2, B: 0.75}
	}
	for id, pc := range c.Providers {
		if pc.Models == nil {
			pc.Models = []string{}
			c.Providers[id] = pc
		}
	}
}

var (
	providerIDRule = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	toolRule       = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.:*-]{0,127}$`)
	modelRule      = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$`)
	providerTypes  = []string{"openai", "anthropic", "google", "mistral", "groq", "openrouter", "ollama", "openai-compatible"}
	permissionVals = []string{"allow", "ask", "deny"}
)

// Validate checks the document after defaults; errors name the JSON path.
func (c *Config) Validate() error {
	for _, id := range sortedKeys(c.Providers) {
		p := c.Providers[id]
		f := "providers." + id
		if !providerIDRule.MatchString(id) {
			return fault.Invalid(f, "provider ids are 1-64 of a-z 0-9 - _")
		}
		if !slices.Contains(providerTypes, p.Type) {
			return fault.Invalid(f+".type", "must be one of %s, got %q", strings.Join(providerTypes, ", "), p.Type)
		}
		if p.BaseURL != "" {
			u, err := url.Parse(p.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fault.Invalid(f+".base_url", "must be an http or https URL, got %q", p.BaseURL)
			}
		} else if p.Type == "openai-compatible" {
			return fault.Invalid(f+".base_url", "required for type openai-compatible")
		}
		if len(p.Name) > 128 {
			return fault.Invalid(f+".name", "must be at most 128 characters")
		}
		if len(p.APIKey) > 4096 {
			return fault.Invalid(f+".api_key", "must be at most 4096 bytes")
		}
		if len(p.Models) > 256 {
			return fault.Invalid(f+".models", "at most 256 models")
		}
		for i, m := range p.Models {
			if !modelRule.MatchString(m) {
				return fault.Invalid(f+".models["+strconv.Itoa(i)+"]", "must be a model id (1-128 of A-Z a-z 0-9 _ . : @ / -), got %q", m)
			}
		}
	}
	for _, m := range []struct{ field, v string }{{"model", c.Model}, {"small_model", c.SmallModel}} {
		if m.v == "" {
			continue
		}
		prov, model, ok := strings.Cut(m.v, "/")
		if !ok || model == "" || !modelRule.MatchString(model) {
			return fault.Invalid(m.field, "must be provider/model, got %q", m.v)
		}
		if _, ok := c.Providers[prov]; !ok {
			return fault.Invalid(m.field, "provider %q is not configured (add it under providers)", prov)
		}
	}
	if len(c.Instructions) > 32 {
		return fault.Invalid("instructions", "at most 32 entries")
	}
	for i, s := range c.Instructions {
		if strings.TrimSpace(s) == "" || len(s) > 1024 {
			return fault.Invalid("instructions["+strconv.Itoa(i)+"]", "must be a non-blank path or pattern of at most 1024 bytes")
		}
	}
	for _, p := range []struct{ field, v string }{{"permission.edit", c.Permission.Edit}, {"permission.bash", c.Permission.Bash},
		{"permission.webfetch", c.Permission.WebFetch}, {"permission.mcp", c.Permission.MCP}} {
		if !slices.Contains(permissionVals, p.v) {
			return fault.Invalid(p.field, "must be allow, ask or deny, got %q", p.v)
		}
	}
	for _, name := range sortedKeys(c.Tools) {
		if !toolRule.MatchString(name) {
			return fault.Invalid("tools."+name, "tool names are 1-128 of A-Z a-z 0-9 _ . : * -")
		}
	}
	m := c.Memory
	for _, r := range []struct {
		field     string
		v, lo, hi int
	}{{"memory.max_block_limit", m.MaxBlockLimit, 1, 1000000}, {"memory.default_block_limit", m.DefaultBlockLimit, 1, m.MaxBlockLimit},
		{"memory.max_blocks", m.MaxBlocks, 1, 10000}, {"memory.max_entry_chars", m.MaxEntryChars, 1, 1000000}} {
		if r.v < r.lo || r.v > r.hi {
			return fault.Invalid(r.field, "must be %d-%d, got %d", r.lo, r.hi, r.v)
		}
	}
	if m.Search.K1 < 0 || m.Search.K1 > 3 {
		return fault.Invalid("memory.search.k1", "must be 0-3, got %g", m.Search.K1)
	}
	if m.Search.B < 0 || m.Search.B > 1 {
		return fault.Invalid("memory.search.b", "must be 0-1, got %g", m.Search.B)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// loadRaw reads the record as written: members never set stay unset, so
// answers can tell a configured value from a default.
func loadRaw(tx *store.Tx, ws string) (storedConfig, error) {
	var sc storedConfig
	if _, err := tx.Get(bucketConfig, ws, &sc); err != nil {
		return sc, err
	}
	if sc.Secrets == nil {
		sc.Secrets = map[string]string{}
	}
	return sc, nil
}

// loadStored reads the record (defaults filled, keys blank).
func (s *Service) loadStored(tx *store.Tx, ws string) (storedConfig, error) {
	sc, err := loadRaw(tx, ws)
	if err != nil {
		return sc, err
	}
	sc.Config.defaults()
	for id, p := range sc.Config.Providers {
		p.APIKey, p.APIKeySet = "", sc.Secrets[id] != ""
		sc.Config.Providers[id] = p
	}
	return sc, nil
}

func (s *Service) loadConfig(tx *store.Tx, ws string) (Config, error) {
	sc, err := s.loadStored(tx, ws)
	return sc.Config, err
}

// GetConfig answers the document (keys never included).
func (s *Service) GetConfig(ctx context.Context, ref WorkspaceRef) (ConfigView, error) {
	ws := ref.Workspace
	var v ConfigView
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		sc, err := s.loadStored(tx, ws)
		v = ConfigView{Config: sc.Config, Version: sc.Version}
		return err
	})
	return v, fault.Wrap("read the workspace configuration", err)
}

// PatchConfig applies a JSON merge patch (RFC 7396) to the document and
// stores the result when it passes the schema; nothing is written
// otherwise. version, when given in the patch, must be the current one
// (409 otherwise).
func (s *Service) PatchConfig(ctx context.Context, req ConfigPatchInput) (ConfigView, error) {
	ws, patch := req.Workspace, map[string]any(req.Body)
	var out ConfigView
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		sc, err := loadRaw(tx, ws)
		if err != nil {
			return err
		}
		if v, ok := patch["version"]; ok {
			n, isNum := v.(float64)
			if !isNum || n != float64(int64(n)) {
				return fault.Invalid("version", "must be an integer")
			}
			if int64(n) != sc.Version {
				return &fault.Error{Code: fault.CodeConflict, Details: "version",
					Message: "version: the configuration is at version " + strconv.FormatInt(sc.Version, 10) + ", not " + strconv.FormatInt(int64(n), 10)}
			}
			delete(patch, "version")
		}
		if _, ok := patch["project"]; ok {
			return fault.Invalid("project", "is set with PATCH /api/v1/workspaces/{workspaceID}/project/{projectID}")
		}
		// Key removal: "api_key": null in the patch.
		removeKey := map[string]bool{}
		provs, _ := patch["providers"].(map[string]any)
		for id, p := range provs {
			if pm, ok := p.(map[string]any); ok {
				if _, ok := pm["api_key_set"]; ok {
					return fault.Invalid("providers."+id+".api_key_set", "is read-only")
				}
				if v, has := pm["api_key"]; has && v == nil {
					removeKey[id] = true
				}
			}
		}
		cur := sc.Config
		cur.Project = nil
		raw, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return err
		}
		merged := mergePatch(doc, patch)
		mraw, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		var next Config
		dec := json.NewDecoder(bytes.NewReader(mraw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&next); err != nil {
			return platform.DecodeBytes(mraw, &next)
		}
		eff := next
		eff.Providers = maps.Clone(next.Providers)
		eff.defaults()
		if err := eff.Validate(); err != nil {
			return err
		}
		secretsOut := map[string]string{}
		for id, p := range next.Providers {
			switch {
			case p.APIKey != "":
				sealed, err := s.sealer.Seal(keyPurpose(ws, id), []byte(p.APIKey))
				if err != nil {
					return err
				}
				secretsOut[id] = sealed
			case !removeKey[id] && sc.Secrets[id] != "":
				secretsOut[id] = sc.Secrets[id]
			}
			p.APIKey, p.APIKeySet = "", false
			next.Providers[id] = p
		}
		next.Project = sc.Config.Project
		rec := storedConfig{Config: next, Secrets: secretsOut, Version: sc.Version + 1}
		if err := tx.Put(bucketConfig, ws, rec); err != nil {
			return err
		}
		for id, p := range eff.Providers {
			p.APIKey, p.APIKeySet = "", secretsOut[id] != ""
			eff.Providers[id] = p
		}
		eff.Project = next.Project
		out = ConfigView{Config: eff, Version: rec.Version}
		return nil
	})
	return out, fault.Wrap("change the workspace configuration", err)
}

func keyPurpose(ws, provider string) string { return "workspace/" + ws + "/provider/" + provider }

// mergePatch applies an RFC 7396 merge patch.
func mergePatch(target any, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergePatch(tm[k], v)
	}
	return tm
}

// LinkProject is the body of PATCH .../project/{projectID}.
type LinkProject struct {
	Name      string `json:"name" doc:"display name of the project"`
	Directory string `json:"directory" doc:"absolute directory of the project's files"`
}

// Validate checks the link.
func (r *LinkProject) Validate() error {
	if len(r.Name) > 128 {
		return fault.Invalid("name", "must be at most 128 characters")
	}
	if r.Directory != "" && !strings.HasPrefix(r.Directory, "/") {
		return fault.Invalid("directory", "must be an absolute path, got %q", r.Directory)
	}
	return nil
}

// LinkProject ties the workspace to a project (replacing any earlier link).
func (s *Service) LinkProject(ctx context.Context, req ProjectLinkInput) (ProjectLink, error) {
	ws, projectID, in := req.Workspace, req.ProjectID, req.Body
	link := ProjectLink{ID: projectID, Name: in.Name, Directory: in.Directory, LinkedAt: s.clock.Now()}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var sc storedConfig
		if _, err := tx.Get(bucketConfig, ws, &sc); err != nil {
			return err
		}
		sc.Config.Project = &link
		sc.Version++
		return tx.Put(bucketConfig, ws, sc)
	})
	return link, fault.Wrap("link the project", err)
}

// ProviderKey opens a provider's stored key for an in-process consumer (a
// model client in the agent). No route answers it; ok is false when no key
// is stored.
func (s *Service) ProviderKey(ctx context.Context, ws, provider string) (key string, ok bool, err error) {
	var sealed string
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		sc, err := loadRaw(tx, ws)
		sealed = sc.Secrets[provider]
		return err
	})
	if err != nil || sealed == "" {
		return "", false, fault.Wrap("read a provider key", err)
	}
	plain, err := s.sealer.Open(keyPurpose(ws, provider), sealed)
	if err != nil {
		return "", false, fault.Internal("open a provider key", err)
	}
	return string(plain), true, nil
}
