package workspace_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/notes"
	"deckhand/services/workspace"
)

// gatewayClient calls the real agent's gateway and records which route
// template each call was for, so the test can insist every route of both
// services answered through it.
type gatewayClient struct {
	t   *testing.T
	gw  string
	hit map[string]bool
}

func (g *gatewayClient) call(svc, method, template, path, body string, want int, hdr ...string) (map[string]any, string, http.Header) {
	g.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+g.gw+"/_/"+svc+path, r)
	if err != nil {
		g.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		g.t.Fatalf("%s /_/%s%s: %d %s, want %d", method, svc, path, resp.StatusCode, raw, want)
	}
	g.hit[svc+" "+method+" "+template] = true
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m, string(raw), resp.Header
}

// startAgent runs `deckhand run --services workspace,notes` on a fresh
// port range and data directory and waits for both through the gateway.
func startAgent(t *testing.T) (gw string, log *platformtest.SyncBuffer) {
	t.Helper()
	bin, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	for attempt := 0; attempt < 3; attempt++ {
		base := platformtest.FreePortBase(t, 14)
		gw = "127.0.0.1:" + strconv.Itoa(base)
		log = &platformtest.SyncBuffer{}
		cmd := exec.Command(bin, "run", "--data", t.TempDir(), "--listen", gw, "--port-base", strconv.Itoa(base),
			"--services", "workspace,notes", "--log-level", "debug")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				if strings.Contains(log.String(), "address already in use") {
					deadline = time.Time{}
					continue
				}
				t.Fatalf("agent exited:\n%s", log)
			default:
			}
			ok := 0
			for _, svc := range []string{"workspace", "notes"} {
				if resp, err := http.Get("http://" + gw + "/_/" + svc + "/health"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						ok++
					}
				}
			}
			if ok == 2 {
				return gw, log
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("the gateway never answered for workspace and notes:\n%s", log)
	return "", nil
}

// TestEveryRouteAnswersThroughTheGateway drives the real binary: every
// route of the workspace and notes services is called through /_/workspace
// and /_/notes, and a provider key never shows in an answer or the log.
func TestEveryRouteAnswersThroughTheGateway(t *testing.T) {
	t.Parallel()
	gw, log := startAgent(t)
	g := &gatewayClient{t: t, gw: gw, hit: map[string]bool{}}
	const W, B = "workspace", "/api/v1/workspaces/{workspaceID}"
	w := "/api/v1/workspaces/e2e"
	const key = "sk-e2e-NEVER-SHOWN-123"

	g.call(W, "PUT", B+"/memory/blocks/{label}", w+"/memory/blocks/human", `{"value":"Name: Ada","description":"who the user is"}`, 201)
	g.call(W, "GET", B+"/memory/blocks", w+"/memory/blocks", "", 200)
	g.call(W, "GET", B+"/memory/blocks/{label}", w+"/memory/blocks/human", "", 200)
	g.call(W, "PATCH", B+"/memory/blocks/{label}", w+"/memory/blocks/human", `{"append":"Prefers Go"}`, 200)
	e1, _, _ := g.call(W, "POST", B+"/memory/journal", w+"/memory/journal", `{"content":"rotated the TLS certificate on the gateway"}`, 201)
	g.call(W, "POST", B+"/memory/journal", w+"/memory/journal", `{"content":"gateway gateway latency regression fixed"}`, 201)
	g.call(W, "GET", B+"/memory/journal", w+"/memory/journal?limit=10", "", 200)
	if m, _, _ := g.call(W, "GET", B+"/memory/journal/count", w+"/memory/journal/count", "", 200); m["count"] != 2.0 {
		t.Fatalf("count %v", m)
	}
	id := e1["id"].(string)
	g.call(W, "GET", B+"/memory/journal/{id}", w+"/memory/journal/"+id, "", 200)
	s, _, _ := g.call(W, "POST", B+"/memory/journal/search", w+"/memory/journal/search", `{"query":"certificate gateway"}`, 200)
	if hits := s["hits"].([]any); len(hits) != 2 || hits[0].(map[string]any)["id"] != id {
		t.Fatalf("search %v", s)
	}
	g.call(W, "DELETE", B+"/memory/journal/{id}", w+"/memory/journal/"+id, "", 204)
	h, _, _ := g.call(W, "GET", B+"/memory/history", w+"/memory/history", "", 200)
	hid := h["changes"].([]any)[0].(map[string]any)["id"].(string)
	g.call(W, "GET", B+"/memory/history/{id}", w+"/memory/history/"+hid, "", 200)
	g.call(W, "DELETE", B+"/memory/blocks/{label}", w+"/memory/blocks/human", "", 204)
	g.call(W, "GET", B+"/memory/config", w+"/memory/config", "", 200)

	_, raw, _ := g.call(W, "PATCH", B+"/config", w+"/config", `{"providers":{"anthropic":{"type":"anthropic","api_key":"`+key+`","models":["claude-x"]}}}`, 200)
	answers := []string{raw}
	_, raw, _ = g.call(W, "GET", B+"/config", w+"/config", "", 200)
	answers = append(answers, raw)
	if m, _, _ := g.call(W, "GET", B+"/config/schema", w+"/config/schema", "", 200); m["properties"].(map[string]any)["providers"] == nil {
		t.Fatalf("schema %v", m)
	}
	_, raw, _ = g.call(W, "GET", B+"/config/providers", w+"/config/providers", "", 200)
	answers = append(answers, raw)
	_, raw, _ = g.call(W, "GET", B+"/providers", w+"/providers", "", 200)
	answers = append(answers, raw)
	g.call(W, "PATCH", B+"/config", w+"/config", `{"memory":{"search":{"k1":9}}}`, 400)
	g.call(W, "POST", B+"/mcp", w+"/mcp", `{"name":"docs","type":"remote","url":"https://docs.example.com/mcp","tools":["search"]}`, 201)
	g.call(W, "GET", B+"/mcp", w+"/mcp", "", 200)
	g.call(W, "GET", B+"/skills", w+"/skills", "", 200)
	g.call(W, "PUT", B+"/skills/{name}", w+"/skills/triage", `{"description":"Triage bugs","content":"1. reproduce"}`, 201)
	g.call(W, "GET", B+"/skills/{name}", w+"/skills/triage", "", 200)
	g.call(W, "PATCH", B+"/skills/{name}", w+"/skills/triage", `{"content":"1. reproduce\n2. bisect"}`, 200)
	g.call(W, "DELETE", B+"/skills/{name}", w+"/skills/triage", "", 204)
	if m, _, _ := g.call(W, "GET", B+"/tools", w+"/tools", "", 200); !strings.Contains(mustJSON(m), `"docs_search"`) {
		t.Fatalf("tools %v", m)
	}
	g.call(W, "PATCH", B+"/project/{projectID}", w+"/project/p1", `{"name":"One"}`, 200)
	g.call(W, "GET", B+"/permissions", w+"/permissions", "", 200)
	q, _, _ := g.call(W, "POST", B+"/questions", w+"/questions", `{"text":"Proceed?","options":["yes","no"]}`, 201)
	g.call(W, "GET", B+"/questions", w+"/questions", "", 200)
	g.call(W, "POST", B+"/questions/{id}/answer", w+"/questions/"+q["id"].(string)+"/answer", `{"answer":"yes"}`, 200)
	for _, a := range answers {
		if strings.Contains(a, key) {
			t.Fatalf("an answer carries the provider key: %s", a)
		}
	}

	const N, D = "notes", "/api/v1/notes/notebooks/{notebookId}/nodes/{nodeId}"
	n := "/api/v1/notes/notebooks/nb/nodes/n1"
	g.call(N, "PUT", D+"/document", n+"/document", `{"title":"Arch","blocks":[{"id":"d","type":"diagram","text":"a -> b -> c"},{"id":"t","type":"text","text":"hello"}]}`, 201)
	g.call(N, "GET", D+"/document", n+"/document", "", 200)
	list, _, _ := g.call(N, "GET", "/api/v1/notes", "/api/v1/notes?notebook=nb", "", 200)
	if nodes, _ := list["nodes"].([]any); len(nodes) != 1 {
		t.Fatalf("notes list %v", list)
	}
	g.call(N, "PATCH", D+"/document", n+"/document", `{"title":"Architecture"}`, 200, "If-Match", `"1"`)
	g.call(N, "PATCH", D+"/document", n+"/document", `{"title":"stale"}`, 409, "If-Match", `"1"`)
	_, svg, hdr := g.call(N, "GET", D+"/blocks/{blockId}/svg", n+"/blocks/d/svg", "", 200)
	if !strings.HasPrefix(hdr.Get("Content-Type"), "image/svg+xml") {
		t.Fatalf("svg content type %q", hdr.Get("Content-Type"))
	}
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("svg not well-formed: %v", err)
		}
	}
	tk, _, _ := g.call(N, "POST", D+"/export-ticket", n+"/export-ticket", "", 201)
	url := tk["url"].(string)
	if !strings.HasPrefix(url, "/_/notes/api/v1/notes/export?ticket=") {
		t.Fatalf("ticket url %q does not go through the gateway", url)
	}
	path := strings.TrimPrefix(url, "/_/notes")
	_, md, _ := g.call(N, "GET", "/api/v1/notes/export", path, "", 200)
	if !strings.HasPrefix(md, "# Architecture\n") {
		t.Fatalf("markdown %q", md)
	}
	g.call(N, "GET", "/api/v1/notes/export", path, "", 410)

	for svc, routes := range map[string][]platform.Route{"workspace": workspaceRoutes(t), "notes": notesRoutes(t)} {
		for _, r := range routes {
			if !g.hit[svc+" "+r.Method+" "+r.Path] {
				t.Errorf("%s %s %s was not called through the gateway", svc, r.Method, r.Path)
			}
		}
	}
	if strings.Contains(log.String(), key) {
		t.Fatal("the agent's log carries the provider key")
	}
	if strings.Contains(log.String(), tk["ticket"].(string)) {
		t.Fatal("the agent's log carries an export ticket")
	}
	if !regexp.MustCompile(`"service":"workspace"`).MatchString(log.String()) {
		t.Fatalf("no request log of the workspace service at debug level, so the key check saw nothing:\n%s", log)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func workspaceRoutes(t *testing.T) []platform.Route {
	svc, err := workspace.New(platformtest.ServiceDeps(t, "workspace"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc.Routes()
}

func notesRoutes(t *testing.T) []platform.Route {
	svc, err := notes.New(platformtest.ServiceDeps(t, "notes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc.Routes()
}
