package projectse2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/control/controltest"
)

// fixture is alice's project with container c1, bob as viewer on it and
// carol with no access.
type fixture struct {
	s                        *server
	pid, cid                 string
	alice, bob, carol, bobID string
	aliceID                  string
}

func newFixture(t *testing.T) *fixture {
	s := start(t)
	f := &fixture{s: s, cid: "c1"}
	f.aliceID, f.alice = s.user("alice")
	f.bobID, f.bob = s.user("bob")
	_, f.carol = s.user("carol")
	f.pid = data(s.must(201, "POST", "/api/v1/projects", map[string]any{"name": "P"}, f.alice))["id"].(string)
	s.must(201, "POST", "/api/v1/admin/containers", map[string]any{"project_id": f.pid, "name": "one", "id": f.cid}, s.admin)
	s.must(201, "POST", "/api/v1/projects/"+f.pid+"/permissions", map[string]any{"user_id": f.bobID, "role": "viewer"}, f.alice)
	return f
}

func TestAdminContainerCreateBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	for _, c := range []struct {
		body  map[string]any
		field string
		code  int
	}{
		{map[string]any{"name": "x"}, "project_id", 400},
		{map[string]any{"project_id": "zzzz", "name": "x"}, "project_id", 400},
		{map[string]any{"project_id": f.pid, "name": "x", "id": "Bad-Id"}, "id", 400},
		{map[string]any{"project_id": f.pid, "name": ""}, "name", 400},
		{map[string]any{"project_id": f.pid, "name": "x", "id": f.cid}, "", 409},
	} {
		r := s.must(c.code, "POST", "/api/v1/admin/containers", c.body, s.admin)
		if c.field != "" && !strings.HasPrefix(r.Body["message"].(string), c.field+":") {
			t.Errorf("%v: %s", c.body, r.Raw)
		}
	}
	s.must(403, "POST", "/api/v1/admin/containers", map[string]any{"project_id": f.pid, "name": "x"}, f.alice)
	gen := data(s.must(201, "POST", "/api/v1/admin/containers", map[string]any{"project_id": f.pid, "name": "x"}, s.admin))["id"].(string)
	if len(gen) != 20 {
		t.Fatalf("generated id %q", gen)
	}
	s.must(200, "GET", "/api/v1/containers/"+gen, nil, f.bob)
	s.must(403, "GET", "/api/v1/containers/"+gen, nil, f.carol)
	list := data(s.must(200, "GET", "/api/v1/projects/"+f.pid+"/containers?limit=1&page=2", nil, f.bob))
	if cs := list["containers"].([]any); len(cs) != 1 || cs[0].(map[string]any)["id"] != gen || list["pagination"].(map[string]any)["total"].(float64) != 2 {
		t.Fatalf("list: %v", list)
	}
	s.must(403, "GET", "/api/v1/projects/"+f.pid+"/containers", nil, f.carol)
	s.must(400, "GET", "/api/v1/projects/"+f.pid+"/containers?page=0", nil, f.bob)
}

func TestContainerNetworkStateMachine(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	net := "/api/v1/containers/" + f.cid + "/network"

	// (none): GET 404, start/stop 400, DELETE 404.
	s.must(404, "GET", net, nil, f.alice)
	for _, op := range []string{"/start", "/stop"} {
		if m := s.must(400, "POST", net+op, nil, f.alice).Body["message"].(string); !strings.Contains(m, "not configured") {
			t.Fatal(m)
		}
	}
	s.must(404, "DELETE", net, nil, f.alice)

	// Bad input.
	if m := s.must(400, "PUT", net, map[string]any{"type": "socks5"}, f.alice).Body["message"].(string); m != "Proxy URL required for non-block type" {
		t.Fatalf("%q", m)
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "type"},
		{map[string]any{"type": "ftp", "proxy": "ftp://h:1"}, "type"},
		{map[string]any{"type": "http", "proxy": "socks5://h:1"}, "proxy"},
		{map[string]any{"type": "http", "proxy": "http://h:70000"}, "proxy"},
		{map[string]any{"type": "http", "proxy": "http://h:80/path"}, "proxy"},
		{map[string]any{"type": "block", "dns_servers": []string{"1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4", "9.9.9.9"}}, "dns_servers"},
		{map[string]any{"type": "block", "dns_servers": []string{"dns.example"}}, "dns_servers[0]"},
		{map[string]any{"type": "block", "allow": []string{"ok.example", "bad name"}}, "allow[1]"},
		{map[string]any{"type": "block", "deny": []string{"10.0.0.0/40"}}, "deny[0]"},
		{map[string]any{"type": "block", "allow": []string{"foo.*.example"}}, "allow[0]"},
	} {
		r := s.must(400, "PUT", net, c.body, f.alice)
		if !strings.HasPrefix(r.Body["message"].(string), c.field+":") {
			t.Errorf("%v: %s", c.body, r.Raw)
		}
	}
	// A password in a refused URL is not echoed.
	if r := s.must(400, "PUT", net, map[string]any{"type": "http", "proxy": "http://u:s3cret-pw@h:99999"}, f.alice); bytes.Contains(r.Raw, []byte("s3cret")) {
		t.Fatalf("echoed: %s", r.Raw)
	}

	// (none) → configured, with credentials stored apart and never echoed.
	r := s.must(200, "PUT", net, map[string]any{"type": "socks5", "proxy": "socks5://user:Pr0xy-Secret@proxy.example:1080", "country": "DE"}, f.alice)
	d := data(r)
	if d["status"] != "configured" || d["proxy"] != "socks5://proxy.example:1080" || d["credentials_configured"] != true ||
		bytes.Contains(r.Raw, []byte("Pr0xy-Secret")) || bytes.Contains(r.Raw, []byte("user@")) {
		t.Fatalf("put: %s", r.Raw)
	}
	if dns := d["dns_servers"].([]any); len(dns) != 2 || dns[0] != "1.1.1.1" || dns[1] != "8.8.8.8" {
		t.Fatalf("default dns: %v", dns)
	}
	g := data(s.must(200, "GET", net, nil, f.bob)) // a viewer reads
	if g["configured"] != true || g["remote_status"].(map[string]any)["is_running"] != false || g["country"] != "DE" {
		t.Fatalf("get: %v", g)
	}
	if v, ok := g["last_status_check"]; !ok || v != nil {
		t.Fatalf("last_status_check must be present and null before any check: %v", g)
	}
	if _, ok := d["last_status_check"]; ok {
		t.Fatalf("last_status_check is GET only: %v", d)
	}
	// Same endpoint without userinfo keeps the credentials; another drops them.
	if d := data(s.must(200, "PUT", net, map[string]any{"type": "socks5", "proxy": "socks5://proxy.example:1080"}, f.alice)); d["credentials_configured"] != true {
		t.Fatalf("kept: %v", d)
	}
	if d := data(s.must(200, "PUT", net, map[string]any{"type": "socks5", "proxy": "socks5://other.example:1080"}, f.alice)); d["credentials_configured"] != false {
		t.Fatalf("dropped: %v", d)
	}
	s.must(200, "PUT", net, map[string]any{"type": "http", "proxy": "http://u2:An0ther-Secret@proxy.example:3128", "dns_servers": []string{"9.9.9.9"}}, f.alice)

	// configured → running → stopped → running; viewers and strangers may not act.
	s.must(403, "POST", net+"/start", nil, f.bob)
	s.must(403, "POST", net+"/start", nil, f.carol)
	st := data(s.must(200, "POST", net+"/start", nil, f.alice))
	if st["status"] != "running" || st["is_running"] != true || st["container_id"] != f.cid || st["last_check"] == nil {
		t.Fatalf("start: %v", st)
	}
	// remote_status is what the agent reports; no agent has.
	g = data(s.must(200, "GET", net, nil, f.alice))
	if rs := g["remote_status"].(map[string]any); g["status"] != "running" || g["last_status_check"] == nil ||
		rs["is_running"] != false || rs["reported"] != false || rs["last_check"] != nil {
		t.Fatalf("get running: %v", g)
	}
	if st := data(s.must(200, "POST", net+"/stop", nil, f.alice)); st["status"] != "stopped" || st["is_running"] != false {
		t.Fatalf("stop: %v", st)
	}
	if st := data(s.must(200, "POST", net+"/start", nil, f.alice)); st["status"] != "running" {
		t.Fatalf("restart: %v", st)
	}
	// A PUT resets a running network to configured.
	if d := data(s.must(200, "PUT", net, map[string]any{"type": "block"}, f.alice)); d["status"] != "configured" || d["credentials_configured"] != false {
		t.Fatalf("block: %v", d)
	}

	// Another user's container: 403 for every route, nothing about the configuration.
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		r := s.must(403, m, net, map[string]any{"type": "block"}, f.carol)
		if bytes.Contains(r.Raw, []byte("block")) || bytes.Contains(r.Raw, []byte(f.pid)) {
			t.Fatalf("403 reveals: %s", r.Raw)
		}
	}
	s.must(404, "GET", "/api/v1/containers/nosuch/network", nil, f.carol)
	s.must(400, "GET", "/api/v1/containers/No-Such/network", nil, f.carol)

	// any → (none).
	s.must(200, "DELETE", net, nil, f.alice)
	s.must(404, "GET", net, nil, f.alice)
	s.must(404, "DELETE", net, nil, f.alice)
	s.must(400, "POST", net+"/start", nil, f.alice)

	if !controltest.OnPostgres() {
		s.Stop()
		raw, err := os.ReadFile(filepath.Join(s.Data, "control.db"))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"Pr0xy-Secret", "An0ther-Secret"} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Fatalf("%s stored in plaintext", secret)
			}
		}
	}
}

func TestNetworkCredentialsAtRest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	net := "/api/v1/containers/" + f.cid + "/network"
	s.must(200, "PUT", net, map[string]any{"type": "https", "proxy": "https://agent:Kept-Secret-42@p.example:8443"}, f.alice)
	// The store holds them sealed (secrets v1 format), on either engine.
	if raw := s.storedCredentials(f.cid); !strings.HasPrefix(raw, "v1.") || strings.Contains(raw, "Kept-Secret-42") || strings.Contains(raw, "agent") {
		t.Fatalf("credentials at rest: %q", raw)
	}
}

// The agent's side: the effective configuration (credentials included,
// signed, with an ETag) and the report GET shows as remote_status.
func TestNetworkEffectiveAndRemoteStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	net := "/api/v1/containers/" + f.cid + "/network"
	eff := net + "/effective"
	agentTok := data(s.must(201, "POST", "/api/v1/containers/"+f.cid+"/agent-tokens", nil, f.alice))["token"].(string)
	svcTok := data(s.must(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "alice"}, f.alice))["token"].(string)

	s.must(404, "GET", eff, nil, agentTok)
	s.must(200, "PUT", net, map[string]any{"type": "socks5", "proxy": "socks5://agent:Eff-Secret-7@proxy.example:1080",
		"allow": []string{"api.example.com", "*.cdn.example", " 10.0.0.0/8 "}, "deny": []string{"bad.cdn.example"}}, f.alice)
	// Only the container's own agent token reads it: not its owner, not
	// the owner's svc_ token.
	s.must(403, "GET", eff, nil, f.alice)
	s.must(403, "GET", eff, nil, svcTok)
	s.must(403, "GET", eff, nil, f.bob)
	s.must(403, "GET", eff, nil, f.carol)
	r := s.must(200, "GET", eff, nil, agentTok)
	d := data(r)
	if d["type"] != "socks5" || d["proxy"] != "socks5://agent:Eff-Secret-7@proxy.example:1080" || d["running"] != false ||
		d["container_id"] != f.cid || len(d["allow"].([]any)) != 3 || d["allow"].([]any)[2] != "10.0.0.0/8" || d["version"] == nil {
		t.Fatalf("effective: %s", r.Raw)
	}
	tag := r.Header.Get("ETag")
	if !strings.HasPrefix(tag, `"network:v`) {
		t.Fatalf("ETag %q", tag)
	}
	s.must(304, "GET", eff, nil, agentTok, "If-None-Match", tag)
	// The public view never has the credentials but has the lists.
	if g := s.must(200, "GET", net, nil, f.bob); bytes.Contains(g.Raw, []byte("Eff-Secret")) || len(data(g)["deny"].([]any)) != 1 {
		t.Fatalf("view: %s", g.Raw)
	}
	// start changes the version: the agent sees it.
	s.must(200, "POST", net+"/start", nil, f.alice)
	r = s.must(200, "GET", eff, nil, agentTok, "If-None-Match", tag)
	if data(r)["running"] != true || r.Header.Get("ETag") == tag {
		t.Fatalf("after start: %s %s", r.Header.Get("ETag"), r.Raw)
	}
	version := data(r)["version"].(float64)

	// The agent's report is what GET shows.
	report := map[string]any{"is_running": true, "last_check": "2026-01-02T03:04:05Z", "enforceable": true, "version": version,
		"allowed": 3, "denied": 1, "dropped": 2, "proxy_reachable": true,
		"recent": []map[string]any{{"time": "2026-01-02T03:04:05Z", "outcome": "denied", "protocol": "tcp", "destination": "192.0.2.1:443",
			"name": "evil.example", "reason": "name evil.example not on the allow list"}}}
	s.must(403, "POST", net+"/remote-status", report, f.bob)
	s.must(403, "POST", net+"/remote-status", report, f.alice)
	s.must(200, "POST", net+"/remote-status", report, agentTok)
	rs := data(s.must(200, "GET", net, nil, f.bob))["remote_status"].(map[string]any)
	if rs["is_running"] != true || rs["last_check"] != "2026-01-02T03:04:05Z" || rs["reported"] != true || rs["in_sync"] != true ||
		rs["denied"].(float64) != 1 || rs["recent_decisions"].([]any)[0].(map[string]any)["name"] != "evil.example" {
		t.Fatalf("remote_status: %v", rs)
	}
	// A PUT moves the version on: the report is no longer in sync.
	s.must(200, "PUT", net, map[string]any{"type": "block"}, f.alice)
	if rs := data(s.must(200, "GET", net, nil, f.alice))["remote_status"].(map[string]any); rs["in_sync"] != false {
		t.Fatalf("after PUT: %v", rs)
	}
	// A report the agent cannot enforce says why.
	s.must(200, "POST", net+"/remote-status", map[string]any{"is_running": false, "enforceable": false,
		"reason": "the agent lacks CAP_NET_ADMIN"}, agentTok)
	if rs := data(s.must(200, "GET", net, nil, f.alice))["remote_status"].(map[string]any); rs["enforceable"] != false ||
		!strings.Contains(rs["reason"].(string), "CAP_NET_ADMIN") || rs["is_running"] != false {
		t.Fatalf("not enforceable: %v", rs)
	}
	// Bad reports name the field.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"recent": []map[string]any{{"outcome": "maybe", "protocol": "tcp"}}}, "recent[0].outcome"},
		{map[string]any{"recent": []map[string]any{{"outcome": "denied", "protocol": "icmp"}}}, "recent[0].protocol"},
		{map[string]any{"version": -1}, "version"},
		{map[string]any{"reason": strings.Repeat("x", 1001)}, "reason"},
	} {
		if m := s.must(400, "POST", net+"/remote-status", c.body, agentTok).Body["message"].(string); !strings.HasPrefix(m, c.field+":") {
			t.Errorf("%v: %s", c.body, m)
		}
	}
	s.must(200, "DELETE", net, nil, f.alice)
	s.must(404, "POST", net+"/remote-status", report, agentTok)
	s.must(404, "GET", eff, nil, agentTok)
}
