package replicae2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
	"deckhand/platform/signing"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

const verifier = "dBjftJeZ4CVP-mJ0kLfzlsH4Ga1tc8HX_mo_Ekdkd5U"

// Two replicas on one database are one control plane: whatever one
// writes, the other honours on the very next request.
func TestTwoReplicasShareOneDatabase(t *testing.T) {
	t.Parallel()
	p := identitytest.NewProvider(t, map[string]any{"sub": "w-1", "preferred_username": "webby", "email": "webby@example.com", "email_verified": true})
	flags := []string{"--oauth-webid-client-id", "deckhand", "--oauth-webid-client-secret", "s3cret",
		"--oauth-webid-auth-url", p.URL + "/authorize", "--oauth-webid-token-url", p.URL + "/token",
		"--oauth-webid-userinfo-url", p.URL + "/userinfo"}
	c := newCluster(t, platformtest.Postgres(t))
	a, b := c.start("A", flags...), c.start("B", flags...)

	// Signup on A, verify and login on B.
	const email = "shared@example.com"
	a.must(a.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPW}, ""), 200)
	b.must(b.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": a.mailToken(email)}, ""), 200)
	login := b.login(email, goodPW)
	access := login["token"].(string)
	if got := str(a.must(a.call("GET", "/api/v1/users/auth/me", nil, access), 200), "data", "email"); got != email {
		t.Fatalf("A's /me for B's session: %q", got)
	}

	// Logout on A is refused on B, which had the session cached.
	b.must(b.call("GET", "/api/v1/users/auth/me", nil, access), 200)
	a.must(a.call("POST", "/api/v1/users/auth/logout", nil, access), 200)
	b.must(b.call("GET", "/api/v1/users/auth/me", nil, access), 401)
	// A refresh token rotated on B is spent on A.
	login = a.login(email, goodPW)
	rt := login["refreshToken"].(string)
	b.must(b.call("POST", "/api/v1/users/auth/refresh", map[string]any{"refreshToken": rt}, rt), 200)
	access = login["token"].(string)

	// A token disabled on B is refused on A, which had it cached.
	tok := data(b.must(b.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "ci"}, access), 201))
	svc, id := tok["token"].(string), tok["id"].(string)
	a.must(a.call("GET", "/api/v1/users/auth/me", nil, svc), 200)
	b.must(b.call("PATCH", "/api/v1/auth/tokens/"+id, map[string]any{"is_enabled": false}, access), 200)
	a.must(a.call("GET", "/api/v1/users/auth/me", nil, svc), 401)

	// A launch ticket consumed on A is gone on B.
	launch := str(a.must(a.call("POST", "/api/v1/auth/launch/initiate", map[string]any{"provider": "webid",
		"code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "state_id": "0b7e8f3a-1c2d-4e5f-9a8b-7c6d5e4f3a2b"},
		"", "Origin", "http://localhost:5173"), 200), "data", "launch_url")
	lu, err := url.Parse(launch)
	if err != nil {
		t.Fatal(err)
	}
	if r := a.call("GET", lu.RequestURI(), nil, ""); r.Status/100 != 3 {
		t.Fatalf("launch on A: %d %s", r.Status, r.Raw)
	}
	if r := b.call("GET", lu.RequestURI(), nil, ""); r.Status != 410 || r.Body["error"] != "Gone" {
		t.Fatalf("ticket consumed on A, on B: %d %s", r.Status, r.Raw)
	}

	// Failed logins count on both: 10 per account, 5 on each.
	const victim = "victim@example.com"
	a.must(a.call("POST", "/api/v1/admin/users", map[string]any{"email": victim, "username": "victim", "password": goodPW, "verified": true},
		a.login(adminEmail, adminPass)["token"].(string)), 201)
	for i := 0; i < 10; i++ {
		r := []*replica{a, b}[i%2]
		r.must(r.call("POST", "/api/v1/users/auth/login", map[string]any{"email": victim, "password": "Wrong-pass-123"}, ""), 401)
	}
	for _, r := range []*replica{a, b} {
		x := r.call("POST", "/api/v1/users/auth/login", map[string]any{"email": victim, "password": goodPW}, "")
		if x.Status != 429 || x.Header.Get("Retry-After") == "" {
			t.Fatalf("11th attempt on %s: %d %s", r.name, x.Status, x.Raw)
		}
	}

	// A response from B verifies with the key set fetched from A; so does
	// one signed after `keys rotate` against the database, used by both
	// within 5 s.
	v := signing.NewVerifier(signing.VerifierOptions{Source: signing.HTTPKeySource(a.HTTP, a.URL)})
	// signedBy is the kid of r's signature, verified with the key set A
	// publishes at the time.
	signedBy := func(r *replica) (string, error) {
		x := r.must(r.call("GET", "/api/v1/auth/available-regions", nil, ""), 200)
		s, err := v.Verify(context.Background(), x.Header.Get(signing.Header), "/api/v1/auth/available-regions", x.Raw)
		if err != nil {
			return "", fmt.Errorf("a response of %s does not verify with A's keys: %w\nA's key set: %s\nB's key set: %s", r.name, err,
				a.call("GET", signing.PublicKeyPath, nil, "").Raw, b.call("GET", signing.PublicKeyPath, nil, "").Raw)
		}
		return s.KID, nil
	}
	kidOf := func(r *replica) string {
		kid, err := signedBy(r)
		if err != nil {
			t.Fatal(err)
		}
		return kid
	}
	old := kidOf(b)
	if kidOf(a) != old {
		t.Fatal("the replicas sign with different keys")
	}
	out, stderr, err := run(t, "keys", "rotate", "--database-url", c.dbURL, "--master-key-file", c.masterKey, "--data", a.Data)
	if err != nil {
		t.Fatalf("keys rotate: %v %s", err, stderr)
	}
	kid := strings.TrimSpace(out)
	if kid == old || !strings.HasPrefix(kid, "ed25519-") {
		t.Fatalf("rotate printed %q", out)
	}
	// Until both have followed the rotation, B may sign with the new key
	// before A publishes it: that is the 5 s the replicas are given.
	eventually(t, 5*time.Second, func() string {
		ka, errA := signedBy(a)
		kb, errB := signedBy(b)
		if err := errors.Join(errA, errB); err != nil {
			return err.Error()
		}
		if ka != kid || kb != kid {
			return fmt.Sprintf("A signs with %s, B with %s, want %s", ka, kb, kid)
		}
		return ""
	})
	var set struct{ Data signing.PublicKeySet }
	x := b.must(b.call("GET", signing.PublicKeyPath, nil, ""), 200)
	if err := json.Unmarshal(x.Raw, &set); err != nil || set.Data.ActiveKID != kid || len(set.Data.Keys) != 2 {
		t.Fatalf("B's key set after rotation: %s", x.Raw)
	}
	// The signing keys are in the database, not in --data.
	if _, err := os.Stat(filepath.Join(a.Data, "keys")); !os.IsNotExist(err) {
		t.Fatalf("--data holds a keys directory: %v", err)
	}
}

// SIGKILL during a burst of signups on A: after a restart every account
// is whole (user record and both indexes) or absent, and B served on.
func TestSignupBurstSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	c := newCluster(t, platformtest.Postgres(t))
	a, b := c.start("A"), c.start("B")
	adminTok := b.login(adminEmail, adminPass)["token"].(string)
	var sent, ok atomic.Int64
	var answered sync.Map // email → true once its creation was answered
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := sent.Add(1)
				email := fmt.Sprintf("burst%d@example.com", n)
				// Half the workers sign up (30 per IP and 5 minutes, then
				// 429), half create users as the admin.
				path, want, body := "/api/v1/auth/signup", 200, map[string]any{"email": email, "password": goodPW}
				if w%2 == 1 {
					path, want = "/api/v1/admin/users", 201
					body = map[string]any{"email": email, "username": fmt.Sprintf("burst%d", n), "password": goodPW, "verified": true}
				}
				x, err := postJSON(a, path, body, adminTok)
				if err != nil {
					return // A is gone
				}
				if x == want {
					answered.Store(email, true)
					ok.Add(1)
				}
			}
		}()
	}
	eventually(t, 30*time.Second, func() string {
		if ok.Load() < 20 {
			return "fewer than 20 signups done"
		}
		return ""
	})
	a.kill()
	close(stop)
	wg.Wait()
	b.must(b.call("GET", "/api/v1/users/auth/me", nil, adminTok), 200)
	a = c.startIn("A", a.Data)
	a.must(a.call("GET", "/api/v1/users/auth/me", nil, adminTok), 200)

	// Whole or absent: every user has both index entries, every index
	// entry names an existing user with that address or name.
	db, err := pgstore.Open(context.Background(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users := map[string]user{}
	err = db.View(func(tx *store.Tx) error {
		if err := tx.ForEach("identity_users", func(k string, raw []byte) error {
			var u user
			if err := json.Unmarshal(raw, &u); err != nil {
				return err
			}
			users[u.ID] = u
			if id := string(tx.GetRaw("identity_users_by_email", u.Email)); id != u.ID {
				t.Errorf("user %s (%s): email index names %q", u.ID, u.Email, id)
			}
			if id := string(tx.GetRaw("identity_users_by_username", strings.ToLower(u.Username))); id != u.ID {
				t.Errorf("user %s (%s): username index names %q", u.ID, u.Username, id)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, idx := range []string{"identity_users_by_email", "identity_users_by_username"} {
			if err := tx.ForEach(idx, func(k string, raw []byte) error {
				if _, found := users[string(raw)]; !found {
					t.Errorf("%s/%s names missing user %s", idx, k, raw)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(users)) < ok.Load()+1 {
		t.Fatalf("%d users, but %d creations were answered", len(users), ok.Load())
	}
	// Every answered creation is in the database.
	answered.Range(func(k, _ any) bool {
		if _, found := findEmail(users, k.(string)); !found {
			t.Errorf("%s was answered as created but is absent", k)
		}
		return true
	})
	// The restarted replica serves signups again.
	a.must(a.call("POST", "/api/v1/auth/signup", map[string]any{"email": "after-restart@example.com", "password": goodPW}, ""), 200)
	t.Logf("%d creations sent, %d answered, %d users in the database", sent.Load(), ok.Load(), len(users))
}

type user struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Username string `json:"username"`
}

func findEmail(users map[string]user, email string) (user, bool) {
	for _, u := range users {
		if u.Email == email {
			return u, true
		}
	}
	return user{}, false
}

// The database stopped while serving: 503 in the control envelope,
// nothing half-written; started again: service resumes by itself.
func TestDatabaseLostWhileServing(t *testing.T) {
	t.Parallel()
	pg := platformtest.NewPGServer(t)
	c := newCluster(t, pg.CreateDB(t))
	a := c.start("A")
	a.must(a.call("POST", "/api/v1/auth/signup", map[string]any{"email": "before@example.com", "password": goodPW}, ""), 200)
	pg.Stop()
	x := a.call("POST", "/api/v1/auth/signup", map[string]any{"email": "during@example.com", "password": goodPW}, "")
	if x.Status != 503 || x.Body["statusCode"] != float64(503) || x.Body["error"] != "Service Unavailable" ||
		!strings.Contains(str(x, "message"), "database") || x.Header.Get(signing.Header) == "" {
		t.Fatalf("signup with the database down: %d %v %s", x.Status, x.Header, x.Raw)
	}
	if strings.Contains(string(x.Raw), "dial") || strings.Contains(string(x.Raw), "127.0.0.1") {
		t.Fatalf("the 503 leaks the driver's error: %s", x.Raw)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, func() string {
		x := a.call("POST", "/api/v1/auth/signup", map[string]any{"email": "after@example.com", "password": goodPW}, "")
		if x.Status != 200 {
			return fmt.Sprintf("signup after the database returned: %d %s", x.Status, x.Raw)
		}
		return ""
	})
	a.must(a.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": a.mailToken("after@example.com")}, ""), 200)
	a.login("after@example.com", goodPW)
}

// Start failures name host and database and never the password;
// `migrate` applies the migrations once.
func TestStartFailuresAndMigrate(t *testing.T) {
	t.Parallel()
	pg := platformtest.NewPGServer(t)
	bad := fmt.Sprintf("postgres://postgres:secretpw@127.0.0.1:%d/nosuchdb?sslmode=disable", pg.Port())
	_, stderr, err := run(t, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--database-url", bad)
	if err == nil || !strings.Contains(stderr, fmt.Sprintf("host 127.0.0.1 port %d", pg.Port())) ||
		!strings.Contains(stderr, `database "nosuchdb"`) || strings.Contains(stderr, "secretpw") {
		t.Fatalf("wrong database: %v\n%s", err, stderr)
	}
	pg.Stop()
	_, stderr, err = run(t, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--database-url",
		fmt.Sprintf("postgres://postgres:secretpw@127.0.0.1:%d/deckhand?sslmode=disable", pg.Port()))
	if err == nil || !strings.Contains(stderr, "cannot connect") || !strings.Contains(stderr, `database "deckhand"`) || strings.Contains(stderr, "secretpw") {
		t.Fatalf("unreachable: %v\n%s", err, stderr)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	u := pg.CreateDB(t)
	out, stderr, err := run(t, "migrate", "--database-url", u)
	if err != nil || !strings.Contains(out, "applied 0001_kv.sql") {
		t.Fatalf("migrate: %v %q %s", err, out, stderr)
	}
	out, _, err = run(t, "migrate", "--database-url", u)
	if err != nil || strings.TrimSpace(out) != "no pending migrations" {
		t.Fatalf("migrate again: %v %q", err, out)
	}
}
