package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/domain"
	"deckhand/control/server"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
)

// notes is a domain written against the domain API: it is built from its
// Env, offers a resource check to other domains, and declares policy and
// limits per route.
type notes struct {
	env    domain.Env[domain.NoConfig]
	booted bool
	closed bool
}

func newNotes(env domain.Env[domain.NoConfig]) (*notes, error) {
	if env.Store == nil || env.Clock == nil || env.Logger == nil || env.Events == nil || env.Authz == nil || env.Limiter == nil || env.Name != "notes" {
		return nil, errors.New("incomplete environment")
	}
	n := &notes{env: env}
	// Only the note's author (the user named in its id) may read it.
	env.Authz.Provide("note.author", func(ctx context.Context, param func(string) string) error {
		p, _ := auth.FromContext(ctx)
		if !strings.HasPrefix(param("id"), p.UserID+"-") {
			return fault.Errorf(fault.CodeForbidden, "not your note")
		}
		return nil
	})
	return n, nil
}

func (n *notes) Bootstrap(context.Context) error { n.booted = true; return nil }
func (n *notes) Close() error                    { n.closed = true; return nil }

// shout is a ByValue limit: the domain applies it to the word shouted.
var shout = ratelimit.RateLimit{Name: "notes.shout", By: ratelimit.ByValue, N: 1, Per: time.Hour, Value: "the word shouted"}

type shoutIn struct {
	Word string `json:"word"`
}

func (n *notes) Shout(ctx context.Context, in shoutIn) (map[string]string, error) {
	if err := n.env.Limiter.Allow(ctx, shout.On(in.Word)); err != nil {
		return nil, err
	}
	return map[string]string{"word": strings.ToUpper(in.Word)}, nil
}

func (n *notes) whoami(ctx context.Context) (map[string]string, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{"user": p.UserID, "role": p.Role, "ip": auth.ClientIP(ctx)}, nil
}

// noteRef names a note.
type noteRef struct {
	ID string `path:"id"`
}

func (n *notes) Routes() []platform.Route {
	ping := ratelimit.RateLimit{Name: "notes.ping", By: ratelimit.ByIP, N: 2, Per: time.Minute}
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/notes/ping", Summary: "public, 2 per minute per IP", Policy: platform.Public,
			Limits: []ratelimit.RateLimit{ping}, Message: "pong", Op: platform.CommandOp(func(context.Context, struct{}) error { return nil })},
		{Method: "GET", Path: "/api/v1/notes/me", Summary: "signed in", Policy: platform.SignedIn, Message: "me", Op: platform.ReadOp(n.whoami)},
		{Method: "GET", Path: "/api/v1/notes/admin", Summary: "admins only", Policy: platform.Admin, Message: "admin", Op: platform.ReadOp(n.whoami)},
		{Method: "GET", Path: "/api/v1/notes/{id}", Summary: "the author", Policy: n.env.Authz.Policy("note.author", "the note's author"),
			Message: "note", Op: platform.Op(func(ctx context.Context, _ noteRef) (map[string]string, error) { return n.whoami(ctx) })},
		{Method: "POST", Path: "/api/v1/notes/shout", Summary: "once per word per hour", Policy: platform.Public,
			Limits: []ratelimit.RateLimit{shout}, Message: "shouted", Op: platform.Op(n.Shout)},
	}
}

const (
	adminEmail = "root@example.com"
	adminPass  = "Admin-pass-123"
)

func loginToken(t *testing.T, r *running, email, pw string) string {
	t.Helper()
	status, body := r.do(t, "POST", "/api/v1/users/auth/login", `{"email":"`+email+`","password":"`+pw+`"}`)
	if status != 200 {
		t.Fatalf("login %s: %d %v", email, status, body)
	}
	return body["data"].(map[string]any)["token"].(string)
}

// One line adds a domain; the host enforces what its routes declare,
// with identity as the authenticator.
func TestDomainAddedWithOneLine(t *testing.T) {
	t.Parallel()
	cfg := baseConfig(t)
	cfg.AdminEmail, cfg.AdminPassword = adminEmail, adminPass
	var n *notes
	r := start(t, cfg, server.WithDomain("notes", func(env domain.Env[domain.NoConfig]) (*notes, error) {
		var err error
		n, err = newNotes(env)
		return n, err
	}))
	if !n.booted {
		t.Fatal("Bootstrap did not run")
	}
	admin := loginToken(t, r, adminEmail, adminPass)
	status, body := r.do(t, "POST", "/api/v1/admin/users", `{"email":"user@example.com","password":"User-pass-123","verified":true}`,
		"Authorization", "Bearer "+admin)
	if status != 201 {
		t.Fatalf("create user: %d %v", status, body)
	}
	userID := body["data"].(map[string]any)["id"].(string)
	user := loginToken(t, r, "user@example.com", "User-pass-123")

	cases := []struct {
		name, path, bearer string
		status             int
	}{
		{"public needs nothing", "/api/v1/notes/ping", "", 200},
		{"signed-in without credential", "/api/v1/notes/me", "", 401},
		{"signed-in with a bad credential", "/api/v1/notes/me", "nonsense", 401},
		{"signed-in as user", "/api/v1/notes/me", user, 200},
		{"admin route as user", "/api/v1/notes/admin", user, 403},
		{"admin route as admin", "/api/v1/notes/admin", admin, 200},
		{"admin route without credential", "/api/v1/notes/admin", "", 401},
		{"resource check passes", "/api/v1/notes/" + userID + "-1", user, 200},
		{"resource check refuses", "/api/v1/notes/" + userID + "-1", admin, 403},
		{"identity's admin API as user", "/api/v1/admin/users", user, 403},
	}
	for _, tc := range cases {
		var hdr []string
		if tc.bearer != "" {
			hdr = []string{"Authorization", "Bearer " + tc.bearer}
		}
		status, body := r.do(t, "GET", tc.path, "", hdr...)
		if status != tc.status {
			t.Errorf("%s: %d, want %d (%v)", tc.name, status, tc.status, body)
		}
	}
	if _, body := r.do(t, "GET", "/api/v1/notes/me", "", "Authorization", "Bearer "+user); body["data"].(map[string]any)["user"] != userID {
		t.Errorf("domain method saw %v", body)
	}

	// Declared limits: the host's (per IP, shared with nobody) and the
	// domain's (per word, through the env's limiter).
	status, _ = r.do(t, "GET", "/api/v1/notes/ping", "")
	if status != 200 {
		t.Fatalf("second ping: %d", status)
	}
	resp, err := http.Get(r.url + "/api/v1/notes/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third ping: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if status, _ := r.do(t, "POST", "/api/v1/notes/shout", `{"word":"hi"}`); status != 200 {
		t.Fatalf("first shout: %d", status)
	}
	if status, body := r.do(t, "POST", "/api/v1/notes/shout", `{"word":"hi"}`); status != 429 || body["error"] != "Too Many Requests" {
		t.Fatalf("second shout: %d %v", status, body)
	}
	if status, _ := r.do(t, "POST", "/api/v1/notes/shout", `{"word":"ho"}`); status != 200 {
		t.Fatalf("another word: %d", status)
	}

	// The document shows every policy and limit.
	res, err := http.Get(r.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			Policy string           `json:"x-policy"`
			Limits []map[string]any `json:"x-rate-limits"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/api/v1/notes/ping": "public", "/api/v1/notes/me": "signed-in",
		"/api/v1/notes/admin": "admin", "/api/v1/notes/{id}": "note.author", "/api/v1/admin/users": "admin",
		"/api/v1/users/auth/me": "signed-in", "/api/v1/meta/public-key": "public"} {
		if got := doc.Paths[path]["get"].Policy; got != want {
			t.Errorf("%s: x-policy %q, want %q", path, got, want)
		}
	}
	if l := doc.Paths["/api/v1/notes/shout"]["post"].Limits; len(l) != 1 || l[0]["by"] != "value" || l[0]["key"] != "the word shouted" {
		t.Errorf("shout limits %v", l)
	}
	login := doc.Paths["/api/v1/users/auth/login"]["post"].Limits
	if len(login) != 2 || login[0]["name"] != "login.ip" || login[1]["counts"] != "failed attempts" {
		t.Errorf("login limits %v", login)
	}
	for path, ops := range doc.Paths {
		for m, op := range ops {
			if op.Policy == "" {
				t.Errorf("%s %s: no x-policy", m, path)
			}
		}
	}
}

// A route requiring a resource check nobody provides stops the start.
func TestMissingResourceCheckFailsStart(t *testing.T) {
	t.Parallel()
	_, err := server.New(baseConfig(t), server.WithDomain("orphan", func(env domain.Env[domain.NoConfig]) (*orphan, error) {
		return &orphan{env.Authz}, nil
	}))
	if err == nil || !strings.Contains(err.Error(), "orphan.member") {
		t.Fatalf("start: %v", err)
	}
}

type orphan struct{ authz *domain.Authorizer }

// Routes asks for the check only when the table is built, after every
// domain's constructor ran.
func (o *orphan) Routes() []platform.Route {
	return []platform.Route{{Method: "GET", Path: "/api/v1/orphan", Summary: "o", Policy: o.authz.Policy("orphan.member", "a member"),
		Handler: func(c fiber.Ctx) error { return nil }}}
}
