package projectse2e_test

import (
	"strings"
	"testing"
)

func TestProjectsPermissionsAndStats(t *testing.T) {
	t.Parallel()
	s := start(t)
	aliceID, alice := s.user("alice")
	bobID, bob := s.user("bob")
	_, carol := s.user("carol")

	p := data(s.must(201, "POST", "/api/v1/projects/", map[string]any{"name": "  Web  ", "description": "site"}, alice))
	pid := p["id"].(string)
	if p["name"] != "Web" || p["owner_id"] != aliceID || p["role"] != "owner" {
		t.Fatalf("created: %v", p)
	}
	s.must(201, "POST", "/api/v1/projects", map[string]any{"name": "Second"}, alice)
	path := "/api/v1/projects/" + pid

	// Another user: 403; unknown: 404; malformed: 400; no credential: 401.
	s.must(403, "GET", path, nil, bob)
	s.must(404, "GET", "/api/v1/projects/zzzzzzzz", nil, bob)
	r := s.must(400, "GET", "/api/v1/projects/NOT-AN-ID", nil, bob)
	if !strings.Contains(r.Body["message"].(string), "id") {
		t.Fatalf("%s", r.Raw)
	}
	s.must(401, "GET", path, nil, "")
	if m := s.must(403, "PATCH", path, map[string]any{"name": "x"}, bob).Body["message"].(string); strings.Contains(m, "Web") || strings.Contains(m, aliceID) {
		t.Fatalf("403 reveals the project: %s", m)
	}

	// PUT replaces (absent description becomes empty), PATCH merges.
	if d := data(s.must(200, "PUT", path, map[string]any{"name": "Web2"}, alice)); d["name"] != "Web2" || d["description"] != "" {
		t.Fatalf("put: %v", d)
	}
	if d := data(s.must(200, "PATCH", path, map[string]any{"description": "again"}, alice)); d["name"] != "Web2" || d["description"] != "again" {
		t.Fatalf("patch: %v", d)
	}
	for _, bad := range []struct {
		method string
		body   any
		field  string
	}{{"PUT", map[string]any{"description": "x"}, "name"}, {"PATCH", map[string]any{}, "body"}, {"PATCH", map[string]any{"name": strings.Repeat("n", 101)}, "name"},
		{"PATCH", map[string]any{"name": 5}, "name"}, {"PATCH", map[string]any{"owner_id": "x"}, "owner_id"}} {
		if m := s.must(400, bad.method, path, bad.body, alice).Body["message"].(string); !strings.HasPrefix(m, bad.field+":") {
			t.Errorf("%v: %s", bad.body, m)
		}
	}

	// Permissions: grant, roles, conflicts, bad input.
	perms := path + "/permissions"
	s.must(400, "POST", perms, map[string]any{"user_id": "nobody", "role": "viewer"}, alice)
	s.must(400, "POST", perms, map[string]any{"user_id": aliceID, "role": "viewer"}, alice)
	if m := s.must(400, "POST", perms, map[string]any{"user_id": bobID, "role": "god"}, alice).Body["message"].(string); !strings.HasPrefix(m, "role:") {
		t.Fatal(m)
	}
	perm := data(s.must(201, "POST", perms, map[string]any{"user_id": bobID, "role": "viewer"}, alice))
	permPath := perms + "/" + perm["id"].(string)
	s.must(409, "POST", perms, map[string]any{"user_id": bobID, "role": "manager"}, alice)
	if d := data(s.must(200, "GET", path, nil, bob)); d["role"] != "viewer" {
		t.Fatalf("viewer sees: %v", d)
	}
	s.must(200, "GET", perms, nil, bob)
	s.must(403, "PATCH", path, map[string]any{"name": "x"}, bob)
	s.must(403, "POST", perms, map[string]any{"user_id": bobID, "role": "manager"}, bob)
	s.must(200, "PUT", permPath, map[string]any{"role": "operator"}, alice)
	s.must(403, "PATCH", path, map[string]any{"name": "x"}, bob)
	s.must(200, "PATCH", permPath, map[string]any{"role": "manager"}, alice)
	s.must(200, "PATCH", path, map[string]any{"name": "By Bob"}, bob)
	s.must(403, "DELETE", path, nil, bob) // only the owner deletes
	s.must(404, "PATCH", perms+"/zzzz", map[string]any{"role": "viewer"}, alice)
	s.must(400, "PATCH", perms+"/BAD-ID", map[string]any{"role": "viewer"}, alice)

	// Lists: only the caller's projects, paginated; page 0 and limit 101 refused.
	if d := data(s.must(200, "GET", "/api/v1/projects?limit=1&page=2", nil, alice)); len(d["projects"].([]any)) != 1 ||
		d["pagination"].(map[string]any)["total"].(float64) != 2 || d["pagination"].(map[string]any)["totalPages"].(float64) != 2 {
		t.Fatalf("alice's list: %v", d)
	}
	if d := data(s.must(200, "GET", "/api/v1/projects", nil, bob)); len(d["projects"].([]any)) != 1 {
		t.Fatalf("bob's list: %v", d)
	}
	if d := data(s.must(200, "GET", "/api/v1/projects", nil, carol)); len(d["projects"].([]any)) != 0 {
		t.Fatalf("carol's list: %v", d)
	}
	for _, q := range []string{"page=0", "limit=101", "limit=0", "page=x"} {
		r := s.must(400, "GET", "/api/v1/projects?"+q, nil, alice)
		if f := strings.SplitN(q, "=", 2)[0]; !strings.Contains(r.Body["message"].(string), f) {
			t.Errorf("%s: %s", q, r.Raw)
		}
	}

	// Admin: create a project for a user and a container in it.
	s.must(403, "POST", "/api/v1/admin/projects", map[string]any{"owner_id": bobID, "name": "x"}, alice)
	s.must(400, "POST", "/api/v1/admin/projects", map[string]any{"owner_id": "nobody", "name": "x"}, s.admin)
	bp := data(s.must(201, "POST", "/api/v1/admin/projects", map[string]any{"owner_id": bobID, "name": "Bob's"}, s.admin))
	if bp["owner_id"] != bobID {
		t.Fatal(bp)
	}
	c := data(s.must(201, "POST", "/api/v1/admin/containers", map[string]any{"project_id": pid, "name": "web-1", "id": "web1"}, s.admin))
	if c["status"] != "creating" || c["project_id"] != pid {
		t.Fatal(c)
	}
	st := data(s.must(200, "GET", path+"/stats", nil, bob))
	if st["containers"].(float64) != 1 || st["members"].(float64) != 2 {
		t.Fatalf("stats: %v", st)
	}
	s.must(403, "GET", path+"/stats", nil, carol)

	// Revoke: bob is out again.
	s.must(200, "DELETE", permPath, nil, alice)
	s.must(403, "GET", path, nil, bob)
	s.must(404, "DELETE", permPath, nil, alice)
	// A project with containers is not deleted; an empty one is.
	s.must(409, "DELETE", path, nil, alice)
	s.must(200, "DELETE", "/api/v1/projects/"+bp["id"].(string), nil, bob)
	s.must(404, "GET", "/api/v1/projects/"+bp["id"].(string), nil, bob)

	kinds := map[string]int{}
	for _, e := range s.events() {
		kinds[e.EventType]++
	}
	for k, n := range map[string]int{"project.created": 3, "project.updated": 3, "project.deleted": 1, "project.permission.granted": 1,
		"project.permission.updated": 2, "project.permission.revoked": 1, "container.creating": 1} {
		if kinds[k] != n {
			t.Errorf("%s: %d events, want %d (%v)", k, kinds[k], n, kinds)
		}
	}
}

// TestGrantByEmail: a project's manager names the user to let in by email
// address (any spelling of it), as the console asks; an address without an
// account, the owner's, and both or neither of user_id and email are 400
// naming the field.
func TestGrantByEmail(t *testing.T) {
	t.Parallel()
	s := start(t)
	_, alice := s.user("alice")
	bobID, _ := s.user("bob")
	carolID, _ := s.user("carol2")
	perms := "/api/v1/projects/" + data(s.must(201, "POST", "/api/v1/projects", map[string]any{"name": "P"}, alice))["id"].(string) + "/permissions"
	if d := data(s.must(201, "POST", perms, map[string]any{"email": "Carol2@EXAMPLE.com", "role": "viewer"}, alice)); d["user_id"] != carolID {
		t.Fatalf("granted by email: %v", d)
	}
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{{map[string]any{"email": "ghost@example.com", "role": "viewer"}, "email:"},
		{map[string]any{"email": "alice@example.com", "role": "viewer"}, "user_id:"},
		{map[string]any{"email": "bob@example.com", "user_id": bobID, "role": "viewer"}, "user_id:"},
		{map[string]any{"role": "viewer"}, "user_id:"}} {
		if m := s.must(400, "POST", perms, bad.body, alice).Body["message"].(string); !strings.HasPrefix(m, bad.field) {
			t.Errorf("grant %v: %s", bad.body, m)
		}
	}
}
