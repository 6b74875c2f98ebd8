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
	g = data(s.must(200, "GET", net, nil, f.alice))
	if g["status"] != "running" || g["last_status_check"] == nil || g["remote_status"].(map[string]any)["is_running"] != true {
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
