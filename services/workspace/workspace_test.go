package workspace_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/workspace"
)

type fixture struct {
	t    *testing.T
	h    *platform.Host
	svc  *workspace.Service
	data string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "workspace")
	svc, err := workspace.New(deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc.SetEnv(func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "env-secret-anthropic"
		}
		return ""
	})
	h := platformtest.ServiceHost(t, svc)
	return &fixture{t: t, h: h, svc: svc, data: deps.DataDir}
}

// do sends a request in-process; it answers status, the decoded object
// and the raw body.
func (f *fixture) do(method, path, body string, hdr ...string) (int, map[string]any, string) {
	f.t.Helper()
	return platformtest.Call(f.t, f.h, method, path, body, hdr...)
}

// want fails unless the answer has the status (and, for errors, names field).
func (f *fixture) want(status int, field, method, path, body string) map[string]any {
	f.t.Helper()
	got, m, raw := f.do(method, path, body)
	if got != status {
		f.t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, got, raw, status)
	}
	if field != "" && (m["details"] != field || !strings.Contains(m["message"].(string), field)) {
		f.t.Fatalf("%s %s %s: %s, want an error naming %q", method, path, body, raw, field)
	}
	return m
}

const ws = "/api/v1/workspaces/w1"

func TestRoutesAreDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	platformtest.CheckRoutesDocumented(t, f.h)
	if n := platformtest.CheckQueryValidation(t, f.h); n == 0 {
		t.Fatal("no query parameter checked")
	}
}

// TestJournalSearchRanksWithBM25 appends entries and searches them: the
// entries holding the words come back, best first, with the scores BM25
// gives them (computed here independently), and a deleted entry leaves
// the index.
func TestJournalSearchRanksWithBM25(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	texts := []string{
		"The deploy script failed on the staging server",
		"Deploy, deploy, deploy: production deploy succeeded",
		"Lunch menu for Friday",
		"Staging database migration notes",
	}
	var ids []string
	for _, tx := range texts {
		m := f.want(201, "", "POST", ws+"/memory/journal", `{"content":`+quote(tx)+`,"tags":["ops"]}`)
		ids = append(ids, m["id"].(string))
	}
	hits := func(q string) ([]string, []float64) {
		m := f.want(200, "", "POST", ws+"/memory/journal/search", `{"query":`+quote(q)+`}`)
		var got []string
		var scores []float64
		for _, h := range m["hits"].([]any) {
			got = append(got, h.(map[string]any)["id"].(string))
			scores = append(scores, h.(map[string]any)["score"].(float64))
		}
		return got, scores
	}
	// lengths in terms, with the tag "ops": 9, 7, 5, 5 → avg 6.5
	bm25 := func(tf, dl, df float64) float64 {
		idf := math.Log(1 + (4-df+0.5)/(df+0.5))
		return idf * tf * 2.2 / (tf + 1.2*(1-0.75+0.75*dl/6.5))
	}
	got, scores := hits("deploy")
	if strings.Join(got, ",") != ids[1]+","+ids[0] {
		t.Fatalf("deploy: %v, want [%s %s]", got, ids[1], ids[0])
	}
	if math.Abs(scores[0]-bm25(4, 7, 2)) > 1e-5 || math.Abs(scores[1]-bm25(1, 9, 2)) > 1e-5 {
		t.Fatalf("deploy scores %v, want %v %v", scores, bm25(4, 7, 2), bm25(1, 9, 2))
	}
	got, _ = hits("staging SERVER")
	if strings.Join(got, ",") != ids[0]+","+ids[3] {
		t.Fatalf("staging server: %v, want [%s %s]", got, ids[0], ids[3])
	}
	if got, _ = hits("friday"); strings.Join(got, ",") != ids[2] {
		t.Fatalf("friday: %v", got)
	}
	if got, _ = hits("nothing-matches-zzz"); len(got) != 0 {
		t.Fatalf("no match: %v", got)
	}
	if m := f.want(200, "", "GET", ws+"/memory/journal/count", ""); m["count"] != 4.0 {
		t.Fatalf("count %v", m)
	}
	f.want(204, "", "DELETE", ws+"/memory/journal/"+ids[1], "")
	f.want(404, "", "DELETE", ws+"/memory/journal/"+ids[1], "")
	f.want(404, "", "GET", ws+"/memory/journal/"+ids[1], "")
	if got, _ = hits("deploy"); strings.Join(got, ",") != ids[0] {
		t.Fatalf("after delete: %v", got)
	}
	if m := f.want(200, "", "GET", ws+"/memory/journal/"+ids[0], ""); m["content"] != texts[0] {
		t.Fatalf("get: %v", m)
	}
	// newest first, paged
	m := f.want(200, "", "GET", ws+"/memory/journal?limit=2", "")
	if es := m["entries"].([]any); len(es) != 2 || es[0].(map[string]any)["id"] != ids[3] || m["next"] != ids[2] {
		t.Fatalf("page 1: %v", m)
	}
	m = f.want(200, "", "GET", ws+"/memory/journal?limit=2&before="+ids[2], "")
	if es := m["entries"].([]any); len(es) != 1 || es[0].(map[string]any)["id"] != ids[0] {
		t.Fatalf("page 2: %v", m)
	}
	// another workspace sees none of it
	if m := f.want(200, "", "POST", "/api/v1/workspaces/w2/memory/journal/search", `{"query":"deploy"}`); len(m["hits"].([]any)) != 0 {
		t.Fatalf("w2: %v", m)
	}
	f.want(400, "query", "POST", ws+"/memory/journal/search", `{"query":"  !! "}`)
	f.want(400, "limit", "POST", ws+"/memory/journal/search", `{"query":"x","limit":500}`)
	f.want(400, "content", "POST", ws+"/memory/journal", `{"content":" "}`)
	f.want(400, "tags[1]", "POST", ws+"/memory/journal", `{"content":"x","tags":["ok","not ok"]}`)
	f.want(400, "before", "GET", ws+"/memory/journal?before=bogus", "")
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestBlocksKeepEveryChangeInHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := ws + "/memory/blocks/persona"
	m := f.want(201, "", "PUT", b, `{"value":"I am terse.","description":"how to speak","limit":30}`)
	if m["version"] != 1.0 || m["limit"] != 30.0 {
		t.Fatalf("created %v", m)
	}
	f.want(200, "", "PUT", b, `{"value":"I am brief.","description":"how to speak","limit":30}`)
	m = f.want(200, "", "PATCH", b, `{"append":"Answer in English."}`)
	if m["value"] != "I am brief.\nAnswer in English." || m["version"] != 3.0 {
		t.Fatalf("appended %v", m)
	}
	f.want(400, "append", "PATCH", b, `{"append":"This sentence makes it far too long."}`)
	f.want(400, "value", "PUT", b, `{"value":"`+strings.Repeat("é", 31)+`","limit":30}`)
	f.want(409, "version", "PATCH", b, `{"value":"x","version":1}`)
	f.want(400, "limit", "PATCH", b, `{"limit":0}`)
	f.want(400, "body", "PATCH", b, `{}`)
	f.want(400, "bogus", "PATCH", b, `{"bogus":1}`)
	f.want(400, "label", "PUT", ws+"/memory/blocks/bad%20label", `{"value":"x"}`)
	f.want(400, "workspaceID", "GET", "/api/v1/workspaces/-bad/memory/blocks", "")
	if m := f.want(200, "", "GET", ws+"/memory/blocks", ""); len(m["blocks"].([]any)) != 1 {
		t.Fatalf("list %v", m)
	}
	f.want(204, "", "DELETE", b, "")
	f.want(404, "", "GET", b, "")
	f.want(404, "", "PATCH", b, `{"value":"x"}`)
	f.want(404, "", "DELETE", b, "")
	m = f.want(200, "", "GET", ws+"/memory/history", "")
	var actions []string
	for _, c := range m["changes"].([]any) {
		actions = append(actions, c.(map[string]any)["action"].(string))
	}
	if strings.Join(actions, ",") != "deleted,updated,updated,created" {
		t.Fatalf("history %v", actions)
	}
	last := m["changes"].([]any)[0].(map[string]any)
	one := f.want(200, "", "GET", ws+"/memory/history/"+last["id"].(string), "")
	if one["after"] != nil || one["before"].(map[string]any)["value"] != "I am brief.\nAnswer in English." {
		t.Fatalf("change %v", one)
	}
	f.want(404, "", "GET", ws+"/memory/history/h_999", "")
	f.want(404, "", "GET", ws+"/memory/history/nope", "")
	// the default limit comes from the memory configuration
	f.want(200, "", "PATCH", ws+"/config", `{"memory":{"default_block_limit":10,"max_blocks":1}}`)
	if m := f.want(201, "", "PUT", ws+"/memory/blocks/a", `{"value":"0123456789"}`); m["limit"] != 10.0 {
		t.Fatalf("default limit %v", m)
	}
	f.want(400, "label", "PUT", ws+"/memory/blocks/b", `{"value":"x"}`) // max_blocks
	mc := f.want(200, "", "GET", ws+"/memory/config", "")
	if mc["default_block_limit"] != 10.0 || mc["blocks"] != 1.0 || mc["ranking"] != "bm25" {
		t.Fatalf("memory config %v", mc)
	}
}

// TestConfigIsCheckedAndKeysNeverAnswered patches the configuration:
// broken rules are 400s naming the field with nothing written, and a
// provider key is sealed at rest and never appears in an answer.
func TestConfigIsCheckedAndKeysNeverAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const key = "sk-test-SECRET-value-42"
	m := f.want(200, "", "GET", ws+"/config", "")
	if m["version"] != 0.0 || m["permission"].(map[string]any)["bash"] != "ask" {
		t.Fatalf("defaults %v", m)
	}
	_, _, raw := f.do("PATCH", ws+"/config", `{"providers":{"openai":{"type":"openai","api_key":"`+key+`","models":["gpt-5"]}},"model":"openai/gpt-5"}`)
	if strings.Contains(raw, key) || !strings.Contains(raw, `"api_key_set":true`) {
		t.Fatalf("patch answer %s", raw)
	}
	for _, p := range []string{"/config", "/config/providers", "/providers"} {
		_, _, raw := f.do("GET", ws+p, "")
		if strings.Contains(raw, key) || strings.Contains(raw, "env-secret") {
			t.Fatalf("GET %s echoes a key: %s", p, raw)
		}
	}
	db, err := os.ReadFile(filepath.Join(f.data, "store.db"))
	if err != nil || bytes.Contains(db, []byte(key)) {
		t.Fatalf("the key is in the store in the clear (%v)", err)
	}
	cp := f.want(200, "", "GET", ws+"/config/providers", "")
	ps := cp["providers"].([]any)
	if len(ps) != 1 || ps[0].(map[string]any)["key_source"] != "config" || cp["default"].(map[string]any)["openai"] != "gpt-5" {
		t.Fatalf("config providers %v", cp)
	}
	all := f.want(200, "", "GET", ws+"/providers", "")
	if c := all["connected"].([]any); len(c) != 2 || c[0] != "anthropic" || c[1] != "openai" {
		t.Fatalf("connected %v (anthropic from the environment, openai configured)", c)
	}
	// a patch without api_key keeps it; null removes it
	f.want(200, "", "PATCH", ws+"/config", `{"providers":{"openai":{"name":"Work"}}}`)
	if m := f.want(200, "", "GET", ws+"/config", ""); m["providers"].(map[string]any)["openai"].(map[string]any)["api_key_set"] != true {
		t.Fatalf("key lost: %v", m)
	}
	bad := []struct{ body, field string }{
		{`{"providers":{"x":{"type":"bogus"}}}`, "providers.x.type"},
		{`{"providers":{"x":{"type":"openai","base_url":"ftp://h"}}}`, "providers.x.base_url"},
		{`{"providers":{"x":{"type":"openai-compatible"}}}`, "providers.x.base_url"},
		{`{"providers":{"Bad Id":{"type":"openai"}}}`, "providers.Bad Id"},
		{`{"providers":{"openai":{"api_key_set":false}}}`, "providers.openai.api_key_set"},
		{`{"model":"nowhere/m"}`, "model"},
		{`{"model":"no-slash"}`, "model"},
		{`{"memory":{"search":{"b":2}}}`, "memory.search.b"},
		{`{"memory":{"max_blocks":0.5}}`, "memory.max_blocks"},
		{`{"memory":{"default_block_limit":200000}}`, "memory.default_block_limit"},
		{`{"permission":{"bash":"sometimes"}}`, "permission.bash"},
		{`{"tools":{"bad tool":true}}`, "tools.bad tool"},
		{`{"instructions":[""]}`, "instructions[0]"},
		{`{"project":{"id":"p"}}`, "project"},
		{`{"unknown":1}`, "unknown"},
		{`{"version":99}`, "version"},
		{`[1]`, "body"},
	}
	for _, b := range bad {
		status := 400
		if b.field == "version" {
			status = 409
		}
		f.want(status, b.field, "PATCH", ws+"/config", b.body)
	}
	m = f.want(200, "", "GET", ws+"/config", "")
	if m["version"] != 2.0 {
		t.Fatalf("a refused patch changed the document: %v", m)
	}
	f.want(200, "", "PATCH", ws+"/config", `{"version":2,"providers":{"openai":{"api_key":null}},"permission":{"bash":"deny"}}`)
	m = f.want(200, "", "GET", ws+"/config", "")
	if m["providers"].(map[string]any)["openai"].(map[string]any)["api_key_set"] != false {
		t.Fatalf("key not removed: %v", m)
	}
	perms := f.want(200, "", "GET", ws+"/permissions", "")
	want := map[string][2]string{"bash": {"deny", "config"}, "edit": {"ask", "default"}, "webfetch": {"allow", "default"}}
	for _, p := range perms["permissions"].([]any) {
		pm := p.(map[string]any)
		if w, ok := want[pm["action"].(string)]; ok && (pm["decision"] != w[0] || pm["source"] != w[1]) {
			t.Fatalf("permission %v, want %v", pm, w)
		}
	}
	// tools: bash is denied, MCP tools appear, the tools map turns some off
	f.want(201, "", "POST", ws+"/mcp", `{"name":"github","type":"remote","url":"https://mcp.example.com/","headers":{"Authorization":"Bearer tok-SECRET"},"tools":["issues","prs"]}`)
	f.want(200, "", "POST", ws+"/mcp", `{"name":"github","type":"remote","url":"https://mcp.example.com/","headers":{"Authorization":"Bearer tok-SECRET"},"tools":["issues","prs"]}`)
	f.want(201, "", "POST", ws+"/mcp", `{"name":"fs","type":"local","command":["mcp-fs","/srv"],"environment":{"TOKEN":"env-SECRET"},"enabled":false,"tools":["read"]}`)
	_, _, raw = f.do("GET", ws+"/mcp", "")
	if strings.Contains(raw, "SECRET") || !strings.Contains(raw, `"headers":["Authorization"]`) || !strings.Contains(raw, `"environment":["TOKEN"]`) {
		t.Fatalf("mcp list %s", raw)
	}
	f.want(400, "url", "POST", ws+"/mcp", `{"name":"x","type":"remote"}`)
	f.want(400, "command", "POST", ws+"/mcp", `{"name":"x","type":"local"}`)
	f.want(400, "type", "POST", ws+"/mcp", `{"name":"x","type":"udp"}`)
	f.want(400, "environment.1BAD", "POST", ws+"/mcp", `{"name":"x","type":"local","command":["a"],"environment":{"1BAD":"v"}}`)
	f.want(200, "", "PATCH", ws+"/config", `{"tools":{"github_*":false,"github_issues":true,"grep":false}}`)
	tl := f.want(200, "", "GET", ws+"/tools", "")
	var names []string
	for _, x := range tl["tools"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	got := strings.Join(names, ",")
	if strings.Contains(got, "bash") || strings.Contains(got, "grep") || strings.Contains(got, "github_prs") || strings.Contains(got, "fs_read") ||
		!strings.Contains(got, "github_issues") || !strings.Contains(got, "read") {
		t.Fatalf("tools %s", got)
	}
	// project link
	l := f.want(200, "", "PATCH", ws+"/project/proj-7", `{"name":"Seven","directory":"/srv/seven"}`)
	if l["id"] != "proj-7" {
		t.Fatalf("link %v", l)
	}
	if m := f.want(200, "", "GET", ws+"/config", ""); m["project"].(map[string]any)["id"] != "proj-7" {
		t.Fatalf("project not in config: %v", m)
	}
	f.want(400, "directory", "PATCH", ws+"/project/p", `{"directory":"relative"}`)
	f.want(400, "projectID", "PATCH", ws+"/project/-x", `{}`)
}

func TestSkillsAndQuestions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := ws + "/skills/release-notes"
	f.want(404, "", "GET", s, "")
	f.want(201, "", "PUT", s, `{"description":"Write release notes","content":"# Steps\n1. Read the log"}`)
	f.want(200, "", "PUT", s, `{"description":"Write release notes","content":"# Steps\n1. Read the git log"}`)
	m := f.want(200, "", "PATCH", s, `{"description":"Write release notes from git"}`)
	if m["version"] != 3.0 || m["content"] != "# Steps\n1. Read the git log" {
		t.Fatalf("patched %v", m)
	}
	f.want(409, "version", "PATCH", s, `{"content":"x","version":1}`)
	f.want(400, "description", "PUT", s, `{"description":"","content":"x"}`)
	f.want(400, "name", "PUT", ws+"/skills/Bad_Name", `{"description":"d","content":"x"}`)
	if m := f.want(200, "", "GET", ws+"/skills", ""); len(m["skills"].([]any)) != 1 {
		t.Fatalf("skills %v", m)
	}
	f.want(204, "", "DELETE", s, "")
	f.want(404, "", "DELETE", s, "")
	f.want(404, "", "PATCH", s, `{"content":"x"}`)

	q := f.want(201, "", "POST", ws+"/questions", `{"text":"Deploy now?","options":["yes","no"],"asked_by":"agent-1"}`)
	f.want(201, "", "POST", ws+"/questions", `{"text":"Which branch?"}`)
	if m := f.want(200, "", "GET", ws+"/questions", ""); len(m["questions"].([]any)) != 2 {
		t.Fatalf("pending %v", m)
	}
	id := q["id"].(string)
	f.want(400, "answer", "POST", ws+"/questions/"+id+"/answer", `{"answer":"maybe"}`)
	f.want(200, "", "POST", ws+"/questions/"+id+"/answer", `{"answer":"yes"}`)
	f.want(409, "status", "POST", ws+"/questions/"+id+"/answer", `{"answer":"no"}`)
	f.want(404, "", "POST", ws+"/questions/q_99/answer", `{"answer":"no"}`)
	if m := f.want(200, "", "GET", ws+"/questions", ""); len(m["questions"].([]any)) != 1 {
		t.Fatalf("pending after answer %v", m)
	}
	if m := f.want(200, "", "GET", ws+"/questions?status=all", ""); len(m["questions"].([]any)) != 2 {
		t.Fatalf("all %v", m)
	}
	f.want(400, "text", "POST", ws+"/questions", `{"text":""}`)
	f.want(400, "options[0]", "POST", ws+"/questions", `{"text":"q","options":[" "]}`)
}

// TestEveryBodyRefusesBadJSONNamingTheField sends every route that takes
// a body malformed JSON, an unknown member and a wrong type: each is a 400
// naming body or the member.
func TestEveryBodyRefusesBadJSONNamingTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	vals := strings.NewReplacer("{workspaceID}", "w1", "{label}", "l1", "{name}", "n1", "{id}", "x_1", "{projectID}", "p1")
	n := 0
	for _, r := range f.svc.Routes() {
		if !r.JSONBody() {
			continue
		}
		path := vals.Replace(r.Path)
		f.want(400, "body", r.Method, path, `{"x`)
		f.want(400, "zz_unknown", r.Method, path, `{"zz_unknown":1}`)
		n++
	}
	if n < 10 {
		t.Fatalf("only %d routes take a body", n)
	}
	f.want(400, "value", "PUT", ws+"/memory/blocks/a", `{"value":5}`)
	f.want(400, "tags", "POST", ws+"/memory/journal", `{"content":"x","tags":"one"}`)
	f.want(400, "memory.search.k1", "PATCH", ws+"/config", `{"memory":{"search":{"k1":"high"}}}`)
}
