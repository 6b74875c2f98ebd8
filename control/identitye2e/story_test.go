package identitye2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The whole account story against the real binary: signup → mail file →
// verify → login → refresh → reuse detected → logout.
func TestAccountStory(t *testing.T) {
	t.Parallel()
	s := start(t)
	const email = "story@example.com"
	s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": "weakpassword"}, ""), 400)
	r := s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPW}, ""), 200)
	if r.str("data", "email") != email || r.header.Get("X-Service-Signature") == "" {
		t.Fatalf("signup: %v %s", r.header, r.raw)
	}
	s.must(s.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": goodPW}, ""), 403)
	s.must(s.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": s.mailToken(email)}, ""), 200)

	login := s.login(email, goodPW)
	access, rt1 := login["token"].(string), login["refreshToken"].(string)
	me := s.must(s.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	if me.str("data", "email") != email || me.header.Get("X-Service-Signature") == "" || me.str("data", "region") != "eu-central-1" {
		t.Fatalf("me (default region: the first available): %s", me.raw)
	}
	r = s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": "r@example.com", "password": goodPW, "region": "ap-southeast-1"}, ""), 400)
	if !strings.Contains(r.str("message"), "region") {
		t.Fatalf("unavailable region: %s", r.raw)
	}
	s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": "r@example.com", "password": goodPW, "region": "us-east-1"}, ""), 200)
	if r := s.refresh(rt1, rt1+" "); r.status != 401 || r.str("message") != "Invalid refresh token" {
		t.Fatalf("mismatch: %d %s", r.status, r.raw)
	}
	rt2 := s.must(s.refresh(rt1, rt1), 200).str("data", "refreshToken")
	// Within the grace window the same old token gives the current pair.
	if got := s.must(s.refresh(rt1, rt1), 200).str("data", "refreshToken"); got != rt2 {
		t.Fatal("grace refresh differs")
	}
	rt3 := s.must(s.refresh(rt2, rt2), 200).str("data", "refreshToken")
	// rt1 is two rotations old: reuse, the family is revoked.
	s.must(s.refresh(rt1, rt1), 401)
	s.must(s.refresh(rt3, rt3), 401)
	s.must(s.call("GET", "/api/v1/users/auth/me", nil, access), 401)

	login = s.login(email, goodPW)
	access, rt := login["token"].(string), login["refreshToken"].(string)
	s.must(s.call("POST", "/api/v1/users/auth/logout", nil, access), 200)
	s.must(s.call("GET", "/api/v1/users/auth/me", nil, access), 401)
	s.must(s.refresh(rt, rt), 401)

	// Recovery by mail.
	s.must(s.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": email}, ""), 200)
	s.must(s.call("POST", "/api/v1/auth/reset-password", map[string]any{"token": s.mailToken(email), "password": "Brand-new-pass-7"}, ""), 200)
	s.login(email, "Brand-new-pass-7")
}

func TestSignupsOffAndAdminAPI(t *testing.T) {
	t.Parallel()
	s := start(t, "--signups=false")
	r := s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": "x@example.com", "password": goodPW}, ""), 403)
	if r.str("error") != "Forbidden" {
		t.Fatalf("%s", r.raw)
	}
	root := s.login(adminEmail, adminPass)["token"].(string)
	u := s.must(s.call("POST", "/api/v1/admin/users", map[string]any{"email": "made@example.com", "username": "made", "password": "Made-pass1", "verified": true}, root), 201)
	id := u.str("data", "id")
	made := s.login("made@example.com", "Made-pass1")["token"].(string)
	s.must(s.call("POST", "/api/v1/admin/users", map[string]any{"email": "y@example.com", "password": "Made-pass1"}, made), 403)
	s.must(s.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{"is_banned": true}, root), 200)
	s.must(s.call("GET", "/api/v1/users/auth/me", nil, made), 403)
	s.must(s.call("PATCH", "/api/v1/admin/users/"+id, map[string]any{"is_banned": false, "role": "admin"}, root), 200)
	s.must(s.call("GET", "/api/v1/admin/users", nil, made), 200)
}

// Every route the binary documents as needing a credential answers 401
// without one.
func TestRouteSweep(t *testing.T) {
	t.Parallel()
	s := start(t)
	doc := s.must(s.call("GET", "/openapi.json", nil, ""), 200)
	var spec struct {
		Paths map[string]map[string]struct {
			Security *[]any `json:"security"`
			Policy   string `json:"x-policy"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc.raw, &spec); err != nil {
		t.Fatal(err)
	}
	// The sweep follows the declared policies: every route shows one, and
	// every route whose policy is not public refuses a missing credential.
	n := 0
	for path, ops := range spec.Paths {
		for method, op := range ops {
			if op.Policy == "" || op.Security == nil {
				t.Errorf("%s %s declares no policy in the document", method, path)
			}
			if op.Policy == "public" {
				continue
			}
			n++
			p := strings.NewReplacer("{id}", "x").Replace(path)
			for strings.Contains(p, "{") {
				i, j := strings.Index(p, "{"), strings.Index(p, "}")
				p = p[:i] + "x" + p[j+1:]
			}
			var body any
			if method != "get" && method != "delete" {
				body = map[string]any{}
			}
			r := s.call(strings.ToUpper(method), p, body, "")
			if r.status != 401 || r.str("error") != "Unauthorized" {
				t.Errorf("%s %s: %d %s", method, path, r.status, r.raw)
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d guarded routes in the document", n)
	}
	_ = time.Second
}

// Sessions, auth tokens and the JWT key survive a restart on the same
// --data directory.
func TestCredentialsSurviveRestart(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startIn(t, data)
	login := s.login(adminEmail, adminPass)
	access, rt := login["token"].(string), login["refreshToken"].(string)
	svc := s.must(s.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "keep"}, access), 201).str("data", "token")
	s.stop()
	s = startIn(t, data)
	s.must(s.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	s.must(s.call("GET", "/api/v1/users/auth/me", nil, svc), 200)
	s.must(s.refresh(rt, rt), 200)
}
