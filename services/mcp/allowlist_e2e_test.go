package mcp_test

import (
	"context"
	"net/http"
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
