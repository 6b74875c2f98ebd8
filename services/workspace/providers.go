package workspace

import (
	"cmp"
	"context"
	"sort"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// catalog is what the service knows about each provider type: the
// environment variable its key is read from when no key is configured.
var catalog = []struct {
	Type, Name, Env, BaseURL string
}{
	{"anthropic", "Anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com"},
	{"google", "Google Gemini", "GEMINI_API_KEY", "https://generativelanguage.googleapis.com"},
	{"groq", "Groq", "GROQ_API_KEY", "https://api.groq.com/openai"},
	{"mistral", "Mistral", "MISTRAL_API_KEY", "https://api.mistral.ai"},
	{"ollama", "Ollama", "", "http://127.0.0.1:11434"},
	{"openai", "OpenAI", "OPENAI_API_KEY", "https://api.openai.com"},
	{"openai-compatible", "OpenAI-compatible", "", ""},
	{"openrouter", "OpenRouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api"},
}

// Provider is one provider as the provider lists answer it. No answer ever
// carries a key: key_source says where one comes from.
type Provider struct {
	ID         string   `json:"id" required:"true"`
	Type       string   `json:"type" required:"true"`
	Name       string   `json:"name" required:"true"`
	BaseURL    string   `json:"base_url" required:"true"`
	Models     []string `json:"models" required:"true"`
	Env        string   `json:"env" required:"true" doc:"the environment variable a key is read from when none is configured (\"\" for none)"`
	Configured bool     `json:"configured" required:"true" doc:"listed under providers in the configuration"`
	Connected  bool     `json:"connected" required:"true" doc:"usable: a key is configured or in the environment, or the type needs none (ollama, or openai-compatible with a base_url)"`
	KeySource  string   `json:"key_source" required:"true" enum:"config,env,none" doc:"where the key comes from; the key itself is never answered"`
}

// ProviderList is the answer of GET .../providers: every known provider
// type plus every configured provider.
type ProviderList struct {
	All       []Provider        `json:"all" required:"true"`
	Connected []string          `json:"connected" required:"true" doc:"ids of the connected providers"`
	Default   map[string]string `json:"default" required:"true" doc:"provider id → its default model (the configured model, else the provider's first model)"`
}

// ConfigProviders is the answer of GET .../config/providers: the
// configured providers only.
type ConfigProviders struct {
	Providers []Provider        `json:"providers" required:"true"`
	Default   map[string]string `json:"default" required:"true"`
}

func (s *Service) provider(id string, p ProviderConfig) Provider {
	out := Provider{ID: id, Type: p.Type, Name: p.Name, BaseURL: p.BaseURL, Models: p.Models, Configured: true, KeySource: "none"}
	for _, c := range catalog {
		if c.Type == p.Type {
			out.Env = c.Env
			out.Name = cmp.Or(out.Name, c.Name)
			out.BaseURL = cmp.Or(out.BaseURL, c.BaseURL)
		}
	}
	switch {
	case p.APIKeySet:
		out.KeySource, out.Connected = "config", true
	case out.Env != "" && s.env(out.Env) != "":
		out.KeySource, out.Connected = "env", true
	case p.Type == "ollama" || (p.Type == "openai-compatible" && out.BaseURL != ""):
		out.Connected = true
	}
	if out.Models == nil {
		out.Models = []string{}
	}
	return out
}

func defaults(cfg Config, ps []Provider) map[string]string {
	d := map[string]string{}
	for _, p := range ps {
		if len(p.Models) > 0 {
			d[p.ID] = p.Models[0]
		}
	}
	for _, m := range []string{cfg.SmallModel, cfg.Model} {
		if prov, model, ok := cut(m); ok {
			d[prov] = model
		}
	}
	return d
}

func cut(m string) (string, string, bool) {
	for i := 0; i < len(m); i++ {
		if m[i] == '/' {
			return m[:i], m[i+1:], true
		}
	}
	return "", "", false
}

func (s *Service) configured(ctx context.Context, ws string) (Config, []Provider, error) {
	var cfg Config
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		cfg, err = s.loadConfig(tx, ws)
		return err
	})
	if err != nil {
		return cfg, nil, fault.Wrap("read the providers", err)
	}
	ps := []Provider{}
	for _, id := range sortedKeys(cfg.Providers) {
		ps = append(ps, s.provider(id, cfg.Providers[id]))
	}
	return cfg, ps, nil
}

// ConfigProviders lists the configured providers.
func (s *Service) ConfigProviders(ctx context.Context, ref WorkspaceRef) (ConfigProviders, error) {
	ws := ref.Workspace
	cfg, ps, err := s.configured(ctx, ws)
	return ConfigProviders{Providers: ps, Default: defaults(cfg, ps)}, err
}

// Providers lists every known provider type (as id = type, unless a
// configured provider already has that id) and every configured provider.
func (s *Service) Providers(ctx context.Context, ref WorkspaceRef) (ProviderList, error) {
	ws := ref.Workspace
	cfg, ps, err := s.configured(ctx, ws)
	if err != nil {
		return ProviderList{}, err
	}
	all := append([]Provider{}, ps...)
	for _, c := range catalog {
		if _, taken := cfg.Providers[c.Type]; taken {
			continue
		}
		p := s.provider(c.Type, ProviderConfig{Type: c.Type})
		p.Configured = false
		if c.Type == "ollama" || c.Type == "openai-compatible" {
			p.Connected = false // needs configuring first
		}
		all = append(all, p)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	l := ProviderList{All: all, Connected: []string{}, Default: defaults(cfg, ps)}
	for _, p := range all {
		if p.Connected {
			l.Connected = append(l.Connected, p.ID)
		}
	}
	return l, nil
}

// MemoryConfigView is the answer of GET .../memory/config.
type MemoryConfigView struct {
	MemoryConfig
	Blocks         int    `json:"blocks" required:"true" doc:"blocks in the workspace now"`
	JournalEntries int    `json:"journal_entries" required:"true" doc:"journal entries now"`
	Ranking        string `json:"ranking" required:"true" doc:"the search's ranking function"`
	Tokenizer      string `json:"tokenizer" required:"true"`
}

// MemoryConfig answers the memory section of the configuration and counts.
func (s *Service) MemoryConfig(ctx context.Context, ref WorkspaceRef) (MemoryConfigView, error) {
	ws := ref.Workspace
	var v MemoryConfigView
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		cfg, err := s.loadConfig(tx, ws)
		v = MemoryConfigView{MemoryConfig: cfg.Memory, Blocks: tx.CountPrefix(bucketBlocks, prefix(ws)),
			JournalEntries: tx.CountPrefix(bucketJournal, prefix(ws)), Ranking: "bm25",
			Tokenizer: "NFKC, lower case, runs of letters and digits; no stemming, no stop words"}
		return err
	})
	return v, fault.Wrap("read the memory configuration", err)
}

// PermissionList is the answer of GET .../permissions.
type PermissionList struct {
	Permissions []PermissionRule `json:"permissions" required:"true"`
}

// PermissionRule is one action and what agents may do about it.
type PermissionRule struct {
	Action   string `json:"action" required:"true" enum:"edit,bash,webfetch,mcp"`
	Decision string `json:"decision" required:"true" enum:"allow,ask,deny" doc:"allow: go ahead; ask: put a question to the user first; deny: refuse"`
	Source   string `json:"source" required:"true" enum:"config,default"`
}

// Permissions answers the effective permission rules.
func (s *Service) Permissions(ctx context.Context, ref WorkspaceRef) (PermissionList, error) {
	ws := ref.Workspace
	var raw storedConfig
	var cfg Config
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		if _, err := tx.Get(bucketConfig, ws, &raw); err != nil {
			return err
		}
		var err error
		cfg, err = s.loadConfig(tx, ws)
		return err
	})
	if err != nil {
		return PermissionList{}, fault.Wrap("read the permissions", err)
	}
	src := func(set string) string {
		if set != "" {
			return "config"
		}
		return "default"
	}
	p, r := cfg.Permission, raw.Config.Permission
	return PermissionList{Permissions: []PermissionRule{
		{"edit", p.Edit, src(r.Edit)}, {"bash", p.Bash, src(r.Bash)},
		{"webfetch", p.WebFetch, src(r.WebFetch)}, {"mcp", p.MCP, src(r.MCP)},
	}}, nil
}
