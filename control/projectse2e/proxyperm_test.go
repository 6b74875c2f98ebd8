package projectse2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func ecPEM(t *testing.T) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func ver(n int) string { return fmt.Sprintf("file:v%d", n) }

func TestProxyPermissionsDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	doc := "/api/v1/containers/" + f.cid + "/proxy/permissions"
	im := func(n int) []string { return []string{"If-Match", ver(n)} }

	s.must(404, "GET", doc, nil, f.alice)
	// 428 without If-Match on every write; 412 when stale; 400 when malformed.
	for _, w := range []struct{ method, path string }{{"PUT", ""}, {"DELETE", ""}, {"PATCH", "/default"}, {"PATCH", "/state"},
		{"PUT", "/groups/g/ip"}, {"DELETE", "/groups/g"}, {"PUT", "/permissions/g"}} {
		s.must(428, w.method, doc+w.path, map[string]any{}, f.alice)
	}
	s.must(412, "PATCH", doc+"/default", map[string]any{"default": "allow"}, f.alice, im(1)...)
	s.must(400, "PATCH", doc+"/default", map[string]any{"default": "allow"}, f.alice, "If-Match", "v1")

	// file:v0 creates.
	d := data(s.must(200, "PUT", doc+"/groups/office/ip", map[string]any{"range": "10.0.0.0/8"}, f.alice, im(0)...))
	if d["file_version"].(float64) != 1 || d["etag"] != "file:v1" || d["default"] != "deny" || d["enable_proxy"] != true ||
		d["project"] != f.pid || d["container"] != f.cid {
		t.Fatalf("created: %v", d)
	}
	s.must(412, "PUT", doc+"/groups/office/ip", map[string]any{"range": "10.0.0.0/8"}, f.alice, im(0)...)
	g := s.must(200, "GET", doc, nil, f.bob)
	if data(g)["etag"] != "file:v1" || !strings.Contains(g.Header.Get("ETag"), "file:v1") {
		t.Fatalf("get: %s %v", g.Raw, g.Header)
	}

	// Bad input: 400 naming the field and the rule; the version does not move.
	for _, c := range []struct {
		path      string
		body      any
		field, in string
	}{
		{"/groups/lan/ip", map[string]any{"range": "10.0.0.0/33"}, "range", "m 0-32"},
		{"/groups/lan/ip", map[string]any{"range": "300.1.1.1/8"}, "range", "IPv4"},
		{"/groups/bot/token", map[string]any{"header": "X-Key", "cookie": "k", "value": "v"}, "body", "exactly one of header, cookie or param"},
		{"/groups/sso/jwt", map[string]any{"algorithm": "RS256", "secret": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", "sources": []string{"header:Authorization"}}, "secret", "SPKI"},
		{"/groups/sso/jwt", map[string]any{"algorithm": "HS512", "secret": "k", "sources": []string{"header:A"}}, "algorithm", "HS256"},
		{"/groups/u/password", map[string]any{"username": "u", "password": "short", "algorithm": "sha256"}, "password", "64 lowercase hex"},
		{"/groups/u/password", map[string]any{"type": "ip", "username": "u", "password": "p"}, "type", "password"},
		{"/groups/Bad%20Name/ip", map[string]any{"range": "1.2.3.4/32"}, "groupName", "letters"},
		{"/permissions/office", map[string]any{"program": "http", "access": "9-3"}, "access", "from must not exceed to"},
		{"/permissions/office", map[string]any{"program": "http", "access": 70000}, "access", "out of range 1-65535"},
		{"/permissions/office", map[string]any{"program": "http", "access": []any{80, "x"}}, "access", "[1]"},
		{"/permissions/office", map[string]any{"program": "ftp", "access": true}, "program", "one of"},
		{"/permissions/office", map[string]any{"program": "http"}, "access", "required"},
	} {
		r := s.must(400, "PUT", doc+c.path, c.body, f.alice, im(1)...)
		m := r.Body["message"].(string)
		if !strings.HasPrefix(m, c.field+":") || !strings.Contains(m, c.in) {
			t.Errorf("%s %v: %s", c.path, c.body, m)
		}
	}
	s.must(400, "PATCH", doc+"/default", map[string]any{"default": "maybe"}, f.alice, im(1)...)
	s.must(400, "PATCH", doc+"/state", map[string]any{}, f.alice, im(1)...)

	// Every group type and access form.
	v := 1
	put := func(path string, body any) map[string]any {
		t.Helper()
		d := data(s.must(200, "PUT", doc+path, body, f.alice, im(v)...))
		v++
		if d["file_version"].(float64) != float64(v) {
			t.Fatalf("%s: version %v, want %d", path, d["file_version"], v)
		}
		return d
	}
	put("/groups/sso/jwt", map[string]any{"algorithm": "ES256", "secret": ecPEM(t), "sources": []string{"header:Authorization", "cookie:session"}, "claims": map[string]any{"team": "ops", "level": 3}})
	put("/groups/hs/jwt", map[string]any{"algorithm": "HS256", "secret": "any string", "sources": []string{"cookie:t"}})
	d = put("/groups/ops/password", map[string]any{"username": "ops", "password": "Plain-Text-Pw"})
	if pg := d["groups"].(map[string]any)["ops"].(map[string]any); pg["password"] != nil || pg["password_configured"] != true || pg["algorithm"] != "argon2id" {
		t.Fatalf("password not hashed, or shown: %v", pg)
	}
	pre := sha256.Sum256([]byte("s" + "pw"))
	d = put("/groups/pre/password", map[string]any{"username": "p", "password": hex.EncodeToString(pre[:]), "algorithm": "sha256", "salt": "s"})
	if pg := d["groups"].(map[string]any)["pre"].(map[string]any); pg["password"] != nil || pg["salt"] != nil || pg["algorithm"] != "sha256" {
		t.Fatalf("pre-hashed password shown: %v", pg)
	}
	put("/groups/bot/token", map[string]any{"param": "key", "value": "tok"})
	put("/groups/peer/service-identity", map[string]any{"projects": []string{f.pid}})
	d = put("/groups/office/ip", map[string]any{"range": "192.168.0.0/16"}) // update
	for prog, access := range map[string]any{"http": []int{80, 443}, "terminal": true, "ssh": 22, "files": "8000-8100", "exec": "*", "services": false} {
		d = put("/permissions/office", map[string]any{"program": prog, "access": access})
	}
	rules := d["permissions"].(map[string]any)["office"].(map[string]any)
	if rules["files"] != "8000-8100" || rules["exec"] != "*" || rules["ssh"].(float64) != 22 || rules["services"] != false || len(rules["http"].([]any)) != 2 {
		t.Fatalf("rules: %v", rules)
	}
	if strings.Contains(string(s.must(200, "GET", doc, nil, f.alice).Raw), "Plain-Text-Pw") {
		t.Fatal("plaintext password stored")
	}

	// Group DELETE keeps the rules naming it.
	d = data(s.must(200, "DELETE", doc+"/groups/office", nil, f.alice, im(v)...))
	v++
	if _, ok := d["groups"].(map[string]any)["office"]; ok || d["permissions"].(map[string]any)["office"] == nil {
		t.Fatalf("after group delete: %v", d)
	}
	s.must(404, "DELETE", doc+"/groups/office", nil, f.alice, im(v)...)
	d = data(s.must(200, "PATCH", doc+"/default", map[string]any{"default": "allow"}, f.alice, im(v)...))
	v++
	d = data(s.must(200, "PATCH", doc+"/state", map[string]any{"enable_proxy": false}, f.alice, im(v)...))
	v++
	if d["default"] != "allow" || d["enable_proxy"] != false {
		t.Fatalf("policy: %v", d)
	}

	// Whole-document PUT: container must equal the path id, project the owner.
	whole := map[string]any{"project": f.pid, "container": f.cid, "groups": map[string]any{"lan": map[string]any{"type": "ip", "range": "10.1.0.0/16"}},
		"permissions": map[string]any{"lan": map[string]any{"http": true}}}
	bad := map[string]any{"project": f.pid, "container": "other", "groups": map[string]any{}, "permissions": map[string]any{}}
	if m := s.must(400, "PUT", doc, bad, f.alice, im(v)...).Body["message"].(string); !strings.HasPrefix(m, "container:") {
		t.Fatal(m)
	}
	bad["container"], bad["project"] = f.cid, "someother"
	s.must(400, "PUT", doc, bad, f.alice, im(v)...)
	s.must(400, "PUT", doc, map[string]any{"project": f.pid, "container": f.cid, "permissions": map[string]any{}}, f.alice, im(v)...)
	d = put("", whole)
	if d["default"] != "deny" || d["enable_proxy"] != true || len(d["groups"].(map[string]any)) != 1 {
		t.Fatalf("replaced: %v", d)
	}

	// Access: a viewer reads but may not write; strangers get 403, unknown 404, malformed 400.
	s.must(403, "PATCH", doc+"/default", map[string]any{"default": "allow"}, f.bob, im(v)...)
	s.must(403, "GET", doc, nil, f.carol)
	s.must(404, "GET", "/api/v1/containers/nosuch/proxy/permissions", nil, f.carol)
	s.must(400, "GET", "/api/v1/containers/NO-SUCH/proxy/permissions", nil, f.carol)

	// DELETE, then file:v0 creates again and the count continues (no ABA).
	s.must(412, "DELETE", doc, nil, f.alice, im(v-1)...)
	s.must(200, "DELETE", doc, nil, f.alice, im(v)...)
	s.must(404, "GET", doc, nil, f.alice)
	s.must(412, "PATCH", doc+"/default", map[string]any{"default": "allow"}, f.alice, im(v)...)
	d = data(s.must(200, "PATCH", doc+"/default", map[string]any{"default": "allow"}, f.alice, im(0)...))
	if d["file_version"].(float64) != float64(v+2) {
		t.Fatalf("re-created at %v, want %d", d["file_version"], v+2)
	}

	kinds := map[string]int{}
	for _, e := range s.events() {
		if strings.HasPrefix(e.EventType, "proxy.permissions.") {
			if e.ResourceType != "proxy_permissions" || e.ContainerID != f.cid || e.ProjectID != f.pid || strings.Contains(string(e.Payload), "Plain-Text") {
				t.Fatalf("event: %+v", e)
			}
		}
		kinds[e.EventType]++
	}
	// added: office, sso, hs, ops, pre, bot, peer, lan; updated: office once + 6 rules;
	// removed: office, then sso hs ops pre bot peer by the whole PUT, lan by DELETE.
	for k, n := range map[string]int{"proxy.permissions.group_added": 8, "proxy.permissions.group_updated": 7,
		"proxy.permissions.group_removed": 8, "proxy.permissions.default_changed": 6} {
		if kinds[k] != n {
			t.Errorf("%s: %d, want %d (%v)", k, kinds[k], n, kinds)
		}
	}
}

func TestProjectProxyPermissions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	doc := "/api/v1/projects/" + f.pid + "/proxy/permissions"
	// bob is a viewer: reads only.
	body := map[string]any{"project": f.pid, "container": "*", "groups": map[string]any{}, "permissions": map[string]any{"all": map[string]any{"http": "*"}}, "default": "allow"}
	s.must(403, "PUT", doc, body, f.bob, "If-Match", "file:v0")
	d := data(s.must(200, "PUT", doc, body, f.alice, "If-Match", "file:v0"))
	if d["container"] != "*" || d["project"] != f.pid || d["file_version"].(float64) != 1 {
		t.Fatalf("%v", d)
	}
	s.must(403, "GET", doc, nil, f.carol)
	// A GET's document (file_version, etag, masked passwords) PUTs back as it is.
	s.must(200, "PUT", doc+"/groups/ops/password", map[string]any{"username": "ops", "password": "pw"}, f.alice, "If-Match", "file:v1")
	got := data(s.must(200, "GET", doc, nil, f.bob))
	back := data(s.must(200, "PUT", doc, got, f.alice, "If-Match", got["etag"].(string)))
	if back["file_version"].(float64) != 3 || back["groups"].(map[string]any)["ops"].(map[string]any)["password_configured"] != true {
		t.Fatalf("round trip: %v -> %v", got, back)
	}
	body["container"] = f.cid
	s.must(400, "PUT", doc, body, f.alice, "If-Match", "file:v3")
	s.must(428, "PATCH", doc+"/state", map[string]any{"enable_proxy": false}, f.alice)
	s.must(200, "PATCH", doc+"/state", map[string]any{"enable_proxy": false}, f.alice, "If-Match", "file:v3")
	// An operator acts on containers but not on the project's document; a manager does.
	list := s.must(200, "GET", "/api/v1/projects/"+f.pid+"/permissions", nil, f.alice).Body["data"].([]any)
	permPath := "/api/v1/projects/" + f.pid + "/permissions/" + list[0].(map[string]any)["id"].(string)
	s.must(200, "PATCH", permPath, map[string]any{"role": "operator"}, f.alice)
	s.must(403, "PATCH", doc+"/default", map[string]any{"default": "deny"}, f.bob, "If-Match", "file:v4")
	s.must(200, "PATCH", "/api/v1/containers/"+f.cid+"/proxy/permissions/default", map[string]any{"default": "deny"}, f.bob, "If-Match", "file:v0")
	s.must(200, "PATCH", permPath, map[string]any{"role": "manager"}, f.alice)
	s.must(200, "PATCH", doc+"/default", map[string]any{"default": "deny"}, f.bob, "If-Match", "file:v4")
	s.must(200, "DELETE", doc, nil, f.alice, "If-Match", "file:v5")
	s.must(404, "GET", doc, nil, f.alice)
}

// TestIfMatchRace: 50 writers send the same version at once, round after
// round; exactly one wins each round and every winner's group is kept.
func TestIfMatchRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	doc := "/api/v1/containers/" + f.cid + "/proxy/permissions"
	const writers, rounds = 50, 4
	winners := []string{}
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		codes := make([]int, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := s.call("PUT", fmt.Sprintf("%s/groups/r%dw%d/ip", doc, round, w), map[string]any{"range": "10.0.0.0/8"}, f.alice, "If-Match", ver(round))
				codes[w] = r.Status
			}(w)
		}
		wg.Wait()
		won := 0
		for w, c := range codes {
			switch c {
			case 200:
				won++
				winners = append(winners, fmt.Sprintf("r%dw%d", round, w))
			case 412:
			default:
				t.Fatalf("round %d writer %d: status %d", round, w, c)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1 (%v)", round, won, codes)
		}
	}
	d := data(s.must(200, "GET", doc, nil, f.alice))
	groups := d["groups"].(map[string]any)
	if d["file_version"].(float64) != rounds || len(groups) != rounds {
		t.Fatalf("version %v, groups %v", d["file_version"], groups)
	}
	for _, w := range winners {
		if groups[w] == nil {
			t.Fatalf("lost update: %s missing from %v", w, groups)
		}
	}
}

// A viewer reads the container's and the project's documents without a
// single secret in the body: no token value, HS256 secret, password hash
// or salt (byte search of the raw answer).
func TestViewerReadsNoSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	pre := sha256.Sum256([]byte("salt-Q7" + "pw"))
	preHex := hex.EncodeToString(pre[:])
	groups := map[string]any{
		"bot": map[string]any{"type": "token", "header": "X-Key", "value": "tok-Value-8f3a"},
		"hs":  map[string]any{"type": "jwt", "algorithm": "HS256", "secret": "hs-Secret-91c2", "sources": []string{"header:Authorization"}},
		"ops": map[string]any{"type": "password", "username": "ops", "password": "Plain-Pw-55e1"},
		"pre": map[string]any{"type": "password", "username": "pre", "password": preHex, "algorithm": "sha256", "salt": "salt-Q7"},
	}
	docs := map[string]string{
		"/api/v1/containers/" + f.cid + "/proxy/permissions": f.cid,
		"/api/v1/projects/" + f.pid + "/proxy/permissions":   "*",
	}
	for path, container := range docs {
		w := s.must(200, "PUT", path, map[string]any{"project": f.pid, "container": container, "groups": groups,
			"permissions": map[string]any{"hs": map[string]any{"terminal": true}}}, f.alice, "If-Match", "file:v0")
		for _, r := range []resp{w, s.must(200, "GET", path, nil, f.bob), s.must(200, "GET", path, nil, f.alice)} {
			for _, secret := range []string{"tok-Value-8f3a", "hs-Secret-91c2", "Plain-Pw-55e1", preHex, "salt-Q7", "$argon2id$"} {
				if strings.Contains(string(r.Raw), secret) {
					t.Fatalf("%s: a document read holds %q:\n%s", path, secret, r.Raw)
				}
			}
			g := data(r)["groups"].(map[string]any)
			if g["bot"].(map[string]any)["value_configured"] != true || g["hs"].(map[string]any)["secret_configured"] != true ||
				g["ops"].(map[string]any)["password_configured"] != true {
				t.Fatalf("%s: secrets not shown as configured: %s", path, r.Raw)
			}
		}
	}
}

// TestProxyPermissionsToolAllowList: a group's mcp_tools (the mcp
// service's tool allow-list, an extension) is validated (400 naming
// mcp_tools and the rule, nothing written), kept by every route that
// writes a group (the per-type PUTs, the whole-document PUT, a masked
// document written back), shown to people and given to the container's
// agent in the effective document, on a container's and a project's
// document.
func TestProxyPermissionsToolAllowList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	doc := "/api/v1/containers/" + f.cid + "/proxy/permissions"
	im := func(n int) []string { return []string{"If-Match", ver(n)} }
	tools := func(d map[string]any, group string) any {
		return d["groups"].(map[string]any)[group].(map[string]any)["mcp_tools"]
	}

	d := data(s.must(200, "PUT", doc+"/groups/bot/token", map[string]any{"header": "X-Key", "value": "tok-1", "mcp_tools": []string{"files_*", "process_run"}}, f.alice, im(0)...))
	if got := tools(d, "bot"); len(got.([]any)) != 2 || got.([]any)[0] != "files_*" {
		t.Fatalf("mcp_tools not kept by the token PUT: %v", d)
	}
	d = data(s.must(200, "PUT", doc+"/groups/office/ip", map[string]any{"range": "10.0.0.0/8", "mcp_tools": []string{"journal_query"}}, f.alice, im(1)...))
	d = data(s.must(200, "PUT", doc+"/groups/open/ip", map[string]any{"range": "192.168.0.0/16"}, f.alice, im(2)...))
	if tools(d, "open") != nil || tools(d, "office").([]any)[0] != "journal_query" {
		t.Fatalf("a group without a list: %v", d)
	}

	// Bad lists, on a group PUT and the whole-document PUT: 400 naming the
	// field and the rule; the version does not move.
	for _, c := range []struct {
		path      string
		body      any
		field, in string
	}{
		{"/groups/bot/token", map[string]any{"header": "X-Key", "value": "v", "mcp_tools": []string{}}, "mcp_tools", "at least one tool"},
		{"/groups/bot/token", map[string]any{"header": "X-Key", "value": "v", "mcp_tools": []string{""}}, "mcp_tools[0]", "must not be empty"},
		{"/groups/bot/token", map[string]any{"header": "X-Key", "value": "v", "mcp_tools": []string{"files_*", "*_read"}}, "mcp_tools[1]", "'*' may only end"},
		{"/groups/bot/token", map[string]any{"header": "X-Key", "value": "v", "mcp_tools": "files_*"}, "mcp_tools", "array"},
		{"/groups/lan/ip", map[string]any{"range": "10.0.0.0/8", "mcp_tools": []any{3}}, "mcp_tools", "string"},
		{"", map[string]any{"project": f.pid, "container": f.cid, "permissions": map[string]any{},
			"groups": map[string]any{"bot": map[string]any{"type": "token", "header": "X-Key", "value": "v", "mcp_tools": []string{"files read"}}}},
			"groups.bot.mcp_tools[0]", "tool name"},
		{"", map[string]any{"project": f.pid, "container": f.cid, "permissions": map[string]any{},
			"groups": map[string]any{"bot": map[string]any{"type": "token", "header": "X-Key", "value": "v", "mcp_tools": map[string]any{}}}},
			"groups.bot.mcp_tools", "array"},
	} {
		r := s.must(400, "PUT", doc+c.path, c.body, f.alice, im(3)...)
		if m := r.Body["message"].(string); !strings.HasPrefix(m, c.field+":") || !strings.Contains(m, c.in) {
			t.Errorf("%s %v: %s", c.path, c.body, m)
		}
	}
	if d := data(s.must(200, "GET", doc, nil, f.alice)); d["file_version"].(float64) != 3 || tools(d, "bot").([]any)[1] != "process_run" {
		t.Fatalf("a refused write changed the document: %v", d)
	}

	// The masked document read back and PUT whole keeps the lists, and a
	// list changed there is stored.
	masked := data(s.must(200, "GET", doc, nil, f.alice))
	delete(masked, "file_version")
	delete(masked, "etag")
	masked["groups"].(map[string]any)["open"].(map[string]any)["mcp_tools"] = []string{"vault_get"}
	d = data(s.must(200, "PUT", doc, masked, f.alice, im(3)...))
	if tools(d, "bot").([]any)[0] != "files_*" || tools(d, "office").([]any)[0] != "journal_query" || tools(d, "open").([]any)[0] != "vault_get" {
		t.Fatalf("the whole-document PUT: %v", d)
	}
	// A group PUT without the field drops the list.
	d = data(s.must(200, "PUT", doc+"/groups/open/ip", map[string]any{"range": "192.168.0.0/16"}, f.alice, im(4)...))
	if tools(d, "open") != nil {
		t.Fatalf("a group PUT without mcp_tools kept a list: %v", d)
	}

	// The container's agent reads the lists with the secrets.
	tok := data(s.must(201, "POST", "/api/v1/containers/"+f.cid+"/agent-tokens", nil, f.alice))["token"].(string)
	eff := data(s.must(200, "GET", doc+"/effective", nil, tok))
	if tools(eff, "bot").([]any)[1] != "process_run" || eff["groups"].(map[string]any)["bot"].(map[string]any)["value"] != "tok-1" {
		t.Fatalf("the effective document: %v", eff)
	}

	// A project's document takes the lists too.
	pdoc := "/api/v1/projects/" + f.pid + "/proxy/permissions"
	d = data(s.must(200, "PUT", pdoc+"/groups/sso/jwt", map[string]any{"algorithm": "HS256", "secret": "k", "sources": []string{"header:Authorization"},
		"mcp_tools": []string{"display_*"}}, f.alice, im(0)...))
	if tools(d, "sso").([]any)[0] != "display_*" {
		t.Fatalf("project document: %v", d)
	}
	s.must(400, "PUT", pdoc+"/groups/sso/jwt", map[string]any{"algorithm": "HS256", "secret": "k", "sources": []string{"header:Authorization"},
		"mcp_tools": []string{"display_**"}}, f.alice, im(1)...)
}
