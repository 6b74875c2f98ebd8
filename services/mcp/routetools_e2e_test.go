package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// routeTools reads the tools service's OpenAPI document declares
// (x-mcp-tool), through the gateway.
func routeTools(t *testing.T, a *agent, service string) map[string]map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", a.gw+"/_/"+service+"/openapi.json", nil)
	req.Header.Set("X-Key", allKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s's document: %v", service, err)
	}
	out := map[string]map[string]any{}
	for _, item := range doc.Paths {
		for _, rawOp := range item {
			var op struct {
				Tool map[string]any `json:"x-mcp-tool"`
			}
			if json.Unmarshal(rawOp, &op) == nil && op.Tool != nil {
				out[op.Tool["name"].(string)] = op.Tool
			}
		}
	}
	return out
}

// listedTools is tools/list as JSON objects, by name.
func listedTools(t *testing.T, s *mcp.ClientSession) map[string]map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]map[string]any{}
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(tool)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = m
	}
	return out
}

// TestRouteToolsListed: every route a service marks as a tool is in
// tools/list with the route's own description, hints and schemas (the
// input's properties and required members, and the answer's schema);
// the only arguments the listing adds are max_chars, this service's output
// budget, and offset, where to read on, to the tools that trim text. Checked with the services in the
// agent's process (their hosts answer in memory) and with one isolated
// (its document read from its port).
func TestRouteToolsListed(t *testing.T) {
	t.Parallel()
	for _, isolate := range []string{"", "process"} {
		t.Run("isolate="+isolate, func(t *testing.T) {
			t.Parallel()
			var extra []string
			if isolate != "" {
				extra = []string{"--isolate", isolate}
			}
			a := startAgent(t, "process,files,vault,notes,tunnel,workspace,journal,mcp", extra...)
			waitService(t, a, 15)
			s := connect(t, a.endpoint(), allKey, nil)
			listed := listedTools(t, s)
			n := 0
			for _, svc := range []string{"process", "files", "vault", "notes", "tunnel", "workspace", "journal"} {
				for name, want := range routeTools(t, a, svc) {
					n++
					got, ok := listed[name]
					if !ok {
						t.Errorf("%s: the route's tool is not in tools/list", name)
						continue
					}
					for _, k := range []string{"description", "title", "annotations", "outputSchema"} {
						if !reflect.DeepEqual(got[k], want[k]) {
							t.Errorf("%s: %s %v, the route's %v", name, k, got[k], want[k])
						}
					}
					gin, win := got["inputSchema"].(map[string]any), want["inputSchema"].(map[string]any)
					if !reflect.DeepEqual(gin["required"], win["required"]) || gin["type"] != "object" {
						t.Errorf("%s: input %v, the route's %v", name, gin, win)
					}
					gp, wp := gin["properties"].(map[string]any), win["properties"].(map[string]any)
					for k, v := range wp {
						if !reflect.DeepEqual(gp[k], v) {
							t.Errorf("%s: argument %s %v, the route's %v", name, k, gp[k], v)
						}
					}
					for k := range gp {
						if _, ok := wp[k]; !ok && k != "max_chars" && k != "offset" {
							t.Errorf("%s: argument %s is not the route's", name, k)
						}
					}
				}
			}
			if n < 20 {
				t.Fatalf("only %d route tools declared by process, files, vault, notes, tunnel, workspace and journal", n)
			}

			// The route tools run, in memory or over the port.
			res := callTool(t, s, "process_start", map[string]any{"cmd": []string{"sleep", "30"}, "tag": "route-tools"})
			id := structured[struct{ ID, State string }](t, res).ID
			if res.IsError || id == "" || !strings.HasPrefix(text(res), "started process "+id) {
				t.Fatalf("process_start: %s", text(res))
			}
			res = callTool(t, s, "process_list", map[string]any{"tag": "route-tools", "state": "running"})
			if l := structured[struct{ Processes []struct{ ID string } }](t, res); res.IsError || len(l.Processes) != 1 || l.Processes[0].ID != id {
				t.Fatalf("process_list: %s", text(res))
			}
			res = callTool(t, s, "process_signal", map[string]any{"id": id, "signal": "BOGUS"})
			if !res.IsError || !strings.Contains(text(res), "INVALID") || !strings.Contains(text(res), "signal") {
				t.Fatalf("process_signal of an unknown signal: %v %s", res.IsError, text(res))
			}
			res = callTool(t, s, "process_signal", map[string]any{"id": id, "signal": "KILL"})
			if res.IsError || text(res) != "sent KILL to process "+id {
				t.Fatalf("process_signal: %s", text(res))
			}
			res = callTool(t, s, "process_list", map[string]any{"state": "sleeping"})
			if !res.IsError || !strings.Contains(text(res), "state") {
				t.Fatalf("process_list with a state that is none: %v %s", res.IsError, text(res))
			}
			res = callTool(t, s, "process_run", map[string]any{"shell": "printf 0123456789", "max_chars": 4})
			if run := structured[struct {
				Stdout    string
				Truncated bool
			}](t, res); run.Stdout != "0123" || !run.Truncated || !strings.Contains(text(res), "process_output with id=") {
				t.Fatalf("process_run with max_chars 4: %+v %q", run, text(res))
			}
			res = callTool(t, s, "process_run", map[string]any{"cmd": []string{"true"}, "no_such": 1})
			if !res.IsError || !strings.Contains(text(res), "no_such") {
				t.Fatalf("process_run with an argument it has not: %v %s", res.IsError, text(res))
			}

			dir := t.TempDir()
			from, to := filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub", "b.txt")
			if err := os.WriteFile(from, []byte("needle in line one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res = callTool(t, s, "files_stat", map[string]any{"path": from})
			if e := structured[struct{ Path, Type string }](t, res); res.IsError || e.Path != from || e.Type != "file" ||
				!strings.HasPrefix(text(res), from+": file, 19 bytes") {
				t.Fatalf("files_stat: %+v %s", e, text(res))
			}
			res = callTool(t, s, "files_search", map[string]any{"path": dir, "content": "needle"})
			if r := structured[struct{ Matches []struct{ Path string } }](t, res); res.IsError || len(r.Matches) != 1 ||
				text(res) != from+":1: needle in line one\n" {
				t.Fatalf("files_search: %+v %q", r, text(res))
			}
			res = callTool(t, s, "files_move", map[string]any{"from": from, "to": to})
			if res.IsError || text(res) != "moved "+from+" to "+to {
				t.Fatalf("files_move: %s", text(res))
			}
			res = callTool(t, s, "files_delete", map[string]any{"path": filepath.Join(dir, "sub")})
			if !res.IsError || !strings.Contains(text(res), "CONFLICT") {
				t.Fatalf("files_delete of a directory that is not empty: %v %s", res.IsError, text(res))
			}
			res = callTool(t, s, "files_delete", map[string]any{"path": filepath.Join(dir, "sub"), "recursive": true})
			if _, err := os.Stat(to); res.IsError || !os.IsNotExist(err) {
				t.Fatalf("files_delete: %s; %v", text(res), err)
			}
			res = callTool(t, s, "files_stat", map[string]any{})
			if !res.IsError || !strings.Contains(text(res), "path") {
				t.Fatalf("files_stat without a path: %v %s", res.IsError, text(res))
			}
		})
	}
}

// waitService waits until the service at offset answers its health on its
// own port (an isolated one starts on its own time).
func waitService(t testing.TB, a *agent, offset int) {
	t.Helper()
	health := "http://127.0.0.1:" + strconv.Itoa(a.base+offset) + "/health"
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service at +%d never answered: %s", offset, a.out)
		}
	}
}
