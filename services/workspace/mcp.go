package workspace

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/store"
)

const bucketMCP = "mcp" // ws/name → mcpRecord

var (
	mcpNameRule = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	envNameRule = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	hdrNameRule = lazyre.New(`^[A-Za-z0-9!#$%&'*+.^_|~-]{1,128}$`)
)

// AddMCP is the body of POST .../mcp: a local server (a command the agent
// runs, speaking MCP on stdio) or a remote one (a URL).
type AddMCP struct {
	Name        string            `json:"name" required:"true" doc:"1-64 of A-Z a-z 0-9 _ -; adding an existing name replaces it"`
	Type        string            `json:"type" required:"true" enum:"local,remote"`
	Command     []string          `json:"command" doc:"local: the program and its arguments"`
	URL         string            `json:"url" doc:"remote: http(s) URL of the server"`
	Environment map[string]string `json:"environment" doc:"local: variables for the program; values are sealed at rest and never answered"`
	Headers     map[string]string `json:"headers" doc:"remote: request headers (tokens); values are sealed at rest and never answered"`
	Tools       []string          `json:"tools" doc:"tool names the server offers, as listed by GET .../tools (the service does not connect to servers)"`
	Enabled     *bool             `json:"enabled" doc:"default true"`
}

// Validate checks the server.
func (r *AddMCP) Validate() error {
	if !mcpNameRule.MatchString(r.Name) {
		return fault.Invalid("name", "must be 1-64 of A-Z a-z 0-9 _ -, got %q", r.Name)
	}
	switch r.Type {
	case "local":
		if len(r.Command) == 0 || strings.TrimSpace(r.Command[0]) == "" {
			return fault.Invalid("command", "required for a local server: the program and its arguments")
		}
		if r.URL != "" {
			return fault.Invalid("url", "only for a remote server")
		}
		if len(r.Headers) > 0 {
			return fault.Invalid("headers", "only for a remote server")
		}
	case "remote":
		u, err := url.Parse(r.URL)
		if r.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fault.Invalid("url", "must be an http or https URL for a remote server, got %q", r.URL)
		}
		if len(r.Command) > 0 {
			return fault.Invalid("command", "only for a local server")
		}
		if len(r.Environment) > 0 {
			return fault.Invalid("environment", "only for a local server")
		}
	default:
		return fault.Invalid("type", "must be local or remote, got %q", r.Type)
	}
	for _, k := range sortedKeys(r.Environment) {
		if !envNameRule.MatchString(k) {
			return fault.Invalid("environment."+k, "is not a variable name")
		}
	}
	for _, k := range sortedKeys(r.Headers) {
		if !hdrNameRule.MatchString(k) {
			return fault.Invalid("headers."+k, "is not a header name")
		}
	}
	for i, t := range r.Tools {
		if !toolRule.MatchString(t) {
			return fault.Invalid("tools["+strconv.Itoa(i)+"]", "tool names are 1-128 of A-Z a-z 0-9 _ . : * -, got %q", t)
		}
	}
	return nil
}

// MCPServer is a server as answered: secret values are never included.
type MCPServer struct {
	Name        string    `json:"name" required:"true"`
	Type        string    `json:"type" required:"true" enum:"local,remote"`
	Command     []string  `json:"command" required:"true"`
	URL         string    `json:"url" required:"true"`
	Environment []string  `json:"environment" required:"true" doc:"names of the variables set (values never answered)"`
	Headers     []string  `json:"headers" required:"true" doc:"names of the headers set (values never answered)"`
	Tools       []string  `json:"tools" required:"true"`
	Enabled     bool      `json:"enabled" required:"true"`
	Status      string    `json:"status" required:"true" enum:"enabled,disabled" doc:"configured state; the service does not connect to servers"`
	AddedAt     time.Time `json:"added_at" required:"true"`
}

// MCPList is the answer of GET .../mcp.
type MCPList struct {
	Servers []MCPServer `json:"servers" required:"true"`
}

type mcpRecord struct {
	MCPServer
	Sealed map[string]string `json:"sealed"` // "env:NAME" / "header:NAME" → sealed value
}

// MCPServers lists a workspace's MCP servers by name.
func (s *Service) MCPServers(ctx context.Context, ref WorkspaceRef) (MCPList, error) {
	l, err := s.mcpServers(ctx, ref.Workspace)
	return MCPList{Servers: l}, err
}

func (s *Service) mcpServers(ctx context.Context, ws string) ([]MCPServer, error) {
	out := []MCPServer{}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		recs, err := listOf[mcpRecord](tx, mcpTable, ws, false)
		for _, r := range recs {
			out = append(out, r.MCPServer)
		}
		return err
	})
	return out, fault.Wrap("list MCP servers", err)
}

// AddMCP adds (or replaces) a server; created tells which.
func (s *Service) AddMCP(ctx context.Context, req MCPAdd) (MCPAnswer, error) {
	srv, created, err := s.addMCP(ctx, req.Workspace, req.Body)
	return MCPAnswer{Status: createdStatus(created), Body: srv}, err
}

func (s *Service) addMCP(ctx context.Context, ws string, in AddMCP) (srv MCPServer, created bool, err error) {
	rec := mcpRecord{Sealed: map[string]string{}}
	rec.MCPServer = MCPServer{Name: in.Name, Type: in.Type, Command: in.Command, URL: in.URL, Tools: in.Tools, Enabled: true,
		Environment: sortedKeys(in.Environment), Headers: sortedKeys(in.Headers), AddedAt: s.clock.Now()}
	if in.Enabled != nil {
		rec.Enabled = *in.Enabled
	}
	rec.Status = "disabled"
	if rec.Enabled {
		rec.Status = "enabled"
	}
	if rec.Command == nil {
		rec.Command = []string{}
	}
	if rec.Tools == nil {
		rec.Tools = []string{}
	}
	for kind, m := range map[string]map[string]string{"env": in.Environment, "header": in.Headers} {
		for k, v := range m {
			sealed, err := s.sealer.Seal("workspace/"+ws+"/mcp/"+in.Name+"/"+kind+":"+k, []byte(v))
			if err != nil {
				return srv, false, fault.Wrap("seal an MCP secret", err)
			}
			rec.Sealed[kind+":"+k] = sealed
		}
	}
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		created = tx.GetRaw(bucketMCP, prefix(ws)+in.Name) == nil
		if created && tx.CountPrefix(bucketMCP, prefix(ws)) >= 100 {
			return fault.Invalid("name", "a workspace holds at most 100 MCP servers")
		}
		return tx.Put(bucketMCP, prefix(ws)+in.Name, rec)
	})
	return rec.MCPServer, created, fault.Wrap("add an MCP server", err)
}
