package mcp_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolAllowList: a group of the permissions document carrying
// mcp_tools ["files_*"] sees and calls only files tools (and reads file
// resources, not the journal's); a process_run is refused naming the tool
// and the allow-list, runs nothing and is journaled; a group without a
// list sees every tool. A client's own copy of the allow-list header is
// dropped by the gateway.
func TestToolAllowList(t *testing.T) {
	t.Parallel()
	const doc = `{"project":"p","container":"c","enable_proxy":true,"groups":{
		"all":{"type":"token","header":"X-Key","value":"all-key"},
		"filesonly":{"type":"token","header":"X-Key","value":"files-key","mcp_tools":["files_*"]}},
		"permissions":{"all":{"exec":true,"files":true,"services":true},"filesonly":{"exec":true,"files":true,"services":true}}}`
	a := startAgentDoc(t, doc, nil, "process,files,journal,mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The files-only credential, claiming every tool in the gateway's
	// header: the claim is dropped.
	s := connectHeader(t, a.endpoint(), "files-key", http.Header{"X-Deckhand-Identity-Tools": {"*"}}, nil)
	names := toolNames(t, s)
	for _, n := range names {
		if !strings.HasPrefix(n, "files_") {
			t.Errorf("a credential allowed files_* is shown %s", n)
		}
	}
	if !slices.Contains(names, "files_read") || !slices.Contains(names, "files_write") {
		t.Fatalf("files tools missing: %v", names)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "process_run", Arguments: map[string]any{"cmd": []string{"touch", marker}}})
	if err == nil || !strings.Contains(err.Error(), "FORBIDDEN") || !strings.Contains(err.Error(), "process_run") ||
		!strings.Contains(err.Error(), "allow-list") {
		t.Fatalf("process_run outside the allow-list: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the refused command ran")
	}
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_ping", Arguments: map[string]any{}}); err == nil ||
		!strings.Contains(err.Error(), "mcp_ping") {
		t.Fatalf("mcp_ping outside the allow-list: %v", err)
	}
	path := filepath.Join(t.TempDir(), "a.txt")
	if res := callTool(t, s, "files_write", map[string]any{"path": path, "content": "hello"}); res.IsError {
		t.Fatalf("files_write: %s", text(res))
	}
	if res := callTool(t, s, "files_read", map[string]any{"path": path}); text(res) != "hello" {
		t.Fatalf("files_read: %q", text(res))
	}
	// Resources follow the tool that reads the same thing: file:// is
	// files_read (allowed), journal:// journal_query (not).
	if rr, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + path}); err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello" {
		t.Fatalf("file resource: %v %v", rr, err)
	}
	if _, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "journal://recent"}); err == nil ||
		!strings.Contains(err.Error(), "journal_query") || !strings.Contains(err.Error(), "allow-list") {
		t.Fatalf("journal resource outside the allow-list: %v", err)
	}
	var templates []string
	for rt, err := range s.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.Name)
	}
	if !slices.Equal(templates, []string{"file"}) {
		t.Errorf("resource templates of a files_* credential: %v", templates)
	}
	if raw := journal(t, a, "source=mcp&limit=100", `"tool":"process_run"`); !strings.Contains(raw, `"tool":"process_run"`) ||
		!strings.Contains(raw, `"outcome":"refused"`) || !strings.Contains(raw, "allow-list") {
		t.Fatalf("the refusal is not in the journal: %s", raw)
	}

	// The credential whose group has no list sees and runs everything,
	// whatever allow-list it claims.
	all := connectHeader(t, a.endpoint(), "all-key", http.Header{"X-Deckhand-Identity-Tools": {"files_read"}}, nil)
	names = toolNames(t, all)
	for _, want := range []string{"process_run", "files_read", "journal_query", "mcp_ping"} {
		if !slices.Contains(names, want) {
			t.Errorf("a credential without a list lacks %s: %v", want, names)
		}
	}
	if res := callTool(t, all, "process_run", map[string]any{"cmd": []string{"touch", marker}}); res.IsError {
		t.Fatalf("process_run: %s", text(res))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("process_run did not run: %v", err)
	}
}

// TestToolAllowListIsABoundary: a group carrying mcp_tools admits its
// holder to the mcp service only. The documented CI token (files tools,
// with exec and files in its rules) runs no command through /_/process/
// and reads no file through /_/files/, while its files tools still work
// through MCP; a list-only token (files_list) reads no file directly
// either. A group without a list keeps its direct access.
func TestToolAllowListIsABoundary(t *testing.T) {
	t.Parallel()
	const doc = `{"project":"p","container":"c","enable_proxy":true,"default":"deny","groups":{
		"ci":{"type":"token","header":"X-Key","value":"ci-key","mcp_tools":["files_*","journal_query"]},
		"lister":{"type":"token","header":"X-Key","value":"list-key","mcp_tools":["files_list"]},
		"ops":{"type":"token","header":"X-Key","value":"ops-key"}},
		"permissions":{"ci":{"exec":true,"files":true,"services":true},"lister":{"files":true,"services":true},
		"ops":{"exec":true,"files":true,"services":true}}}`
	a := startAgentDoc(t, doc, nil, "process,files,journal,mcp")
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	direct := func(key, method, path, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, a.gw+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	run := `{"cmd":["touch","` + marker + `"]}`
	read := "/_/files/api/v1/files/content?path=" + url.QueryEscape(secret)
	for _, key := range []string{"ci-key", "list-key"} {
		if st := direct(key, "POST", "/_/process/api/v1/process/run", run); st != http.StatusForbidden {
			t.Errorf("%s straight to the process service: %d, want 403", key, st)
		}
		if st := direct(key, "GET", read, ""); st != http.StatusForbidden {
			t.Errorf("%s straight to the files service: %d, want 403", key, st)
		}
		if st := direct(key, "GET", "/_/journal/health", ""); st != http.StatusForbidden {
			t.Errorf("%s straight to the journal service: %d, want 403", key, st)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a listed group ran a command through the process service")
	}

	// Its tools act with the group's programs.
	ci := connectHeader(t, a.endpoint(), "ci-key", nil, nil)
	if res := callTool(t, ci, "files_read", map[string]any{"path": secret}); res.IsError || text(res) != "hello" {
		t.Fatalf("files_read through MCP: %q", text(res))
	}
	lister := connectHeader(t, a.endpoint(), "list-key", nil, nil)
	if res := callTool(t, lister, "files_list", map[string]any{"path": dir}); res.IsError || !strings.Contains(text(res), "secret.txt") {
		t.Fatalf("files_list through MCP: %q", text(res))
	}

	// A group without a list is not narrowed.
	if st := direct("ops-key", "GET", read, ""); st != http.StatusOK {
		t.Errorf("ops straight to the files service: %d, want 200", st)
	}
	if st := direct("ops-key", "POST", "/_/process/api/v1/process/run", run); st != http.StatusOK {
		t.Errorf("ops straight to the process service: %d, want 200", st)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("ops's command did not run: %v", err)
	}
}
