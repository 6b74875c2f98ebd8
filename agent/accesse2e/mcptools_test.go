package accesse2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/control/controltest"
)

// keyed adds X-Key to every request of an MCP client.
type keyed struct {
	key  string
	next http.RoundTripper
}

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Key", k.key)
	return k.next.RoundTrip(r)
}

// mcpTools lists the tools the agent's mcp service shows key through the
// gateway.
func mcpTools(t *testing.T, a *agentProc, key string) []string {
	t.Helper()
	names, err := tryTools(a, key)
	if err != nil {
		t.Fatalf("tools with %s: %v", key, err)
	}
	return names
}

// tryTools is mcpTools answering its error.
func tryTools(a *agentProc, key string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "accesse2e", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + a.gw + "/_/mcp/api/v1/mcp",
		HTTPClient: &http.Client{Transport: keyed{key: key, next: &http.Transport{Proxy: nil}}}}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer s.Close()
	var names []string
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		names = append(names, tool.Name)
	}
	return names, nil
}

// onlyPrefix reports whether every name starts with prefix (and there is
// at least one).
func onlyPrefix(names []string, prefix string) bool {
	return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, prefix) })
}

// TestSyncedToolAllowList: a group's mcp_tools written through the
// control plane reaches the agent in the synced document and limits the
// mcp service's tools for that group's credential; a group without one
// sees every tool; a changed list applies to the next session.
func TestSyncedToolAllowList(t *testing.T) {
	c := newControl(t, "c1")
	s, alice, pid := c.s, c.alice, c.pid
	agt := c.agentToken("c1")
	doc := "/api/v1/containers/c1/proxy/permissions"
	all := map[string]any{"files": true, "services": true, "exec": true}
	cur := controltest.Data(s.Must(s.Call("PUT", doc, map[string]any{"project": pid, "container": "c1",
		"groups": map[string]any{
			"files": map[string]any{"type": "token", "header": "X-Key", "value": "k-files", "mcp_tools": []string{"files_*"}},
			"all":   map[string]any{"type": "token", "header": "X-Key", "value": "k-all"}},
		"permissions": map[string]any{"files": all, "all": all}}, alice, "If-Match", "file:v0"), 200))["etag"].(string)

	a := startAgentProbe(t, t.TempDir(), []string{"X-Key", "k-all"}, "--services", "notes,files,process,mcp",
		"--control-url", s.URL, "--container-id", "c1", "--project-id", pid, "--token", agt)
	a.within(t, 30*time.Second, 200, "/_/mcp/health", "127.0.0.1", "X-Key", "k-files")

	// The probe passes on loopback before the synced document is in
	// force (a session begun then is another caller's once it is); the
	// list applies once it is.
	deadline := time.Now().Add(30 * time.Second)
	for {
		names, err := tryTools(a, "k-files")
		if err == nil && onlyPrefix(names, "files_") && slices.Contains(names, "files_read") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the files_* group is shown %v (%v)\nagent log:\n%s", names, err, a.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if names := mcpTools(t, a, "k-all"); !slices.Contains(names, "process_run") || !slices.Contains(names, "files_read") || !slices.Contains(names, "notes_read") {
		t.Fatalf("the group without a list is shown %v", names)
	}

	// A new list applies once the agent has synced it.
	s.Must(s.Call("PUT", doc+"/groups/files/token", map[string]any{"header": "X-Key", "value_configured": true, "mcp_tools": []string{"notes_*"}},
		alice, "If-Match", cur), 200)
	deadline = time.Now().Add(30 * time.Second)
	for names := mcpTools(t, a, "k-files"); !onlyPrefix(names, "notes_"); names = mcpTools(t, a, "k-files") {
		if time.Now().After(deadline) {
			t.Fatalf("after the change the group is shown %v\nagent log:\n%s", names, a.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
