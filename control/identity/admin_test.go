package identity_test

import (
	"strings"
	"testing"
)

func (e *env) admin() string {
	e.t.Helper()
	created, err := e.svc.EnsureAdmin("root@example.com", "Admin-pass-123")
	if err != nil || !created {
		e.t.Fatalf("EnsureAdmin: %v %v", created, err)
	}
	if created, err := e.svc.EnsureAdmin("root@example.com", "Admin-pass-123"); err != nil || created {
		e.t.Fatalf("EnsureAdmin twice: %v %v", created, err)
	}
	return e.login("root@example.com", "Admin-pass-123")["token"].(string)
}

func TestAdminUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.admin()
	user := e.account("plain@example.com")["token"].(string)

	body := map[string]any{"email": "made@example.com", "username": "made", "password": "Made-pass1", "verified": true}
	r := e.must(e.call("POST", "/api/v1/admin/users", body, user), 403)
	if r.str("error") != "Forbidden" {
		t.Fatalf("%s", r.raw)
	}
	r = e.must(e.call("POST", "/api/v1/admin/users", body, root), 201)
	id := r.str("data", "id")
	if r.str("data", "username") != "made" || r.str("data", "role") != "user" || r.data()["email_verified"] != true {
		t.Fatalf("create: %s", r.raw)
	}
	e.must(e.call("POST", "/api/v1/admin/users", body, root), 409)
	for _, bad := range []map[string]any{
		{"email": "x@example.com", "password": "Made-pass1", "role": "owner"},
		{"email": "x@example.com", "password": "weak"},
		{"email": "x@example.com", "password": "Made-pass1", "username": "a b"},
	} {
		if r := e.call("POST", "/api/v1/admin/users", bad, root); r.status != 400 {
			t.Errorf("%v: %d %s", bad, r.status, r.raw)
		}
	}
	made := e.login("made@example.com", "Made-pass1")["token"].(string)
	svc := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "m"}, made), 201).str("data", "token")

	// Promote: the user's existing credentials now carry the admin role.
	e.must(e.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{"role": "admin"}, root), 200)
	e.must(e.call("GET", "/api/v1/admin/users", nil, made), 200)
	e.must(e.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{"role": "user"}, root), 200)
	e.must(e.call("GET", "/api/v1/admin/users", nil, made), 403)

	// Ban: session and svc token stop at once; login is refused; unban restores.
	e.must(e.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{"is_banned": true}, root), 200)
	if r := e.call("GET", "/api/v1/users/auth/me", nil, made); r.status != 403 || !strings.Contains(r.str("message"), "banned") {
		t.Fatalf("banned session: %d %s", r.status, r.raw)
	}
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, svc), 403)
	e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "made@example.com", "password": "Made-pass1"}, ""), 403)
	e.must(e.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{"is_banned": false}, root), 200)
	e.must(e.call("GET", "/api/v1/users/auth/me", nil, made), 200)

	e.must(e.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{}, root), 400)
	e.must(e.call("PATCH", "/api/v1/admin/users/nope", map[string]any{"is_banned": true}, root), 404)
	rootID := e.must(e.call("GET", "/api/v1/users/auth/me", nil, root), 200).str("data", "id")
	e.must(e.call("PATCH", "/api/v1/admin/users/"+rootID, map[string]any{"is_banned": true}, root), 400)

	got := strings.Join(e.events(id), ",")
	want := "user.created,user.role_changed,user.role_changed,user.banned,user.unbanned"
	if got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}
