package vault_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/vault"
)

type fixture struct {
	deps contract.ServiceDeps
	svc  *vault.Service
	h    *platform.Host
	key  string
}

func newVault(t testing.TB, clock clockpkg.Clock) *fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "vault")
	if clock != nil {
		deps.Clock = clock
	}
	key := filepath.Join(t.TempDir(), "vault.key")
	svc, err := vault.New(deps, &vault.Settings{KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return &fixture{deps: deps, svc: svc, h: platformtest.ServiceHost(t, svc), key: key}
}

type answer struct {
	status int
	m      map[string]any
	raw    string
	etag   string
}

func (f *fixture) call(t *testing.T, method, target, body string, hdr ...string) answer {
	t.Helper()
	req := platformtest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	// A hang guard, not a timing assertion: the machine may be loaded.
	resp, err := f.h.App().Test(req, fiber.TestConfig{Timeout: 30 * time.Second, FailOnTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return answer{resp.StatusCode, m, string(raw), resp.Header.Get("ETag")}
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	platformtest.CheckRoutesDocumented(t, newVault(t, nil).h)
}

func TestBadQueryParametersAreNamed(t *testing.T) {
	t.Parallel()
	if n := platformtest.CheckQueryValidation(t, newVault(t, nil).h); n == 0 {
		t.Fatal("vault declares no query parameters to check")
	}
}

func TestKeyFileIsCreatedPrivate(t *testing.T) {
	t.Parallel()
	f := newVault(t, nil)
	st, err := os.Stat(f.key)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	f := newVault(t, nil)
	a := f.call(t, "PUT", "/api/v1/vault/keys/db.password", `{"value":{"user":"app","pass":"s3cret","tags":["a"]}}`)
	if a.status != 201 || a.m["version"] != 1.0 || a.etag != `"1"` || a.m["key"] != "db.password" {
		t.Fatalf("create: %+v", a)
	}
	a = f.call(t, "GET", "/api/v1/vault/keys/db.password", "")
	if a.status != 200 || !strings.Contains(a.raw, `"value":{"user":"app","pass":"s3cret","tags":["a"]}`) {
		t.Fatalf("get: %+v", a)
	}
	for _, k := range []string{"key", "value", "version", "created_at", "updated_at"} {
		if _, ok := a.m[k]; !ok {
			t.Errorf("GET misses %s: %s", k, a.raw)
		}
	}
	a = f.call(t, "PATCH", "/api/v1/vault/keys/db.password", `{"value":{"pass":"n3w","tags":null,"opts":{"ssl":true}}}`)
	if a.status != 200 || a.m["version"] != 2.0 || !strings.Contains(a.raw, `"value":{"opts":{"ssl":true},"pass":"n3w","user":"app"}`) {
		t.Fatalf("patch: %+v", a)
	}
	if a = f.call(t, "PUT", "/api/v1/vault/keys/plain", `{"value":"just a string"}`); a.status != 201 {
		t.Fatalf("string value: %+v", a)
	}
	if a = f.call(t, "PATCH", "/api/v1/vault/keys/plain", `{"value":{"x":1}}`); a.status != 409 {
		t.Fatalf("patch of a non-object: %+v", a)
	}
	if a = f.call(t, "PATCH", "/api/v1/vault/keys/missing", `{"value":{"x":1}}`); a.status != 404 {
		t.Fatalf("patch of a missing key: %+v", a)
	}
	a = f.call(t, "GET", "/api/v1/vault/keys", "")
	if a.status != 200 || strings.Contains(a.raw, "s3cret") || strings.Contains(a.raw, "n3w") || strings.Contains(a.raw, "just a string") ||
		!strings.Contains(a.raw, `"key":"db.password"`) || !strings.Contains(a.raw, `"key":"plain"`) {
		t.Fatalf("list: %+v", a)
	}
	a = f.call(t, "GET", "/api/v1/vault/keys?limit=1", "")
	if a.m["next"] != "db.password" || len(a.m["keys"].([]any)) != 1 {
		t.Fatalf("page: %+v", a)
	}
	if a = f.call(t, "GET", "/api/v1/vault/keys?after=db.password", ""); !strings.Contains(a.raw, `"plain"`) || strings.Contains(a.raw, "db.password") {
		t.Fatalf("next page: %+v", a)
	}
	a = f.call(t, "GET", "/api/v1/vault/stats", "")
	if a.status != 200 || a.m["keys"] != 2.0 || a.m["encryption"] != "AES-256-GCM" {
		t.Fatalf("stats: %+v", a)
	}
	if a = f.call(t, "DELETE", "/api/v1/vault/keys/plain", ""); a.status != 204 {
		t.Fatalf("delete: %+v", a)
	}
	if a = f.call(t, "GET", "/api/v1/vault/keys/plain", ""); a.status != 404 || a.m["code"] != "NOT_FOUND" {
		t.Fatalf("deleted: %+v", a)
	}
	if a = f.call(t, "DELETE", "/api/v1/vault", ""); a.status != 200 || a.m["deleted"] != 1.0 {
		t.Fatalf("wipe: %+v", a)
	}
	if a = f.call(t, "GET", "/api/v1/vault/stats", ""); a.m["keys"] != 0.0 {
		t.Fatalf("after wipe: %+v", a)
	}
}

func TestPreconditions(t *testing.T) {
	t.Parallel()
	f := newVault(t, nil)
	if a := f.call(t, "PUT", "/api/v1/vault/keys/k", `{"value":1}`, "If-Match", `"1"`); a.status != 412 {
		t.Fatalf("If-Match on a missing key: %+v", a)
	}
	if a := f.call(t, "PUT", "/api/v1/vault/keys/k", `{"value":1}`, "If-None-Match", "*"); a.status != 201 {
		t.Fatalf("create only: %+v", a)
	}
	if a := f.call(t, "PUT", "/api/v1/vault/keys/k", `{"value":2}`, "If-None-Match", "*"); a.status != 412 {
		t.Fatalf("create only, existing: %+v", a)
	}
	if a := f.call(t, "PUT", "/api/v1/vault/keys/k", `{"value":2}`, "If-Match", `"1"`); a.status != 200 || a.etag != `"2"` {
		t.Fatalf("matching version: %+v", a)
	}
	if a := f.call(t, "PUT", "/api/v1/vault/keys/k", `{"value":3}`, "If-Match", `"1"`); a.status != 412 || a.m["code"] != "PRECONDITION_FAILED" {
		t.Fatalf("stale version: %+v", a)
	}
	if a := f.call(t, "DELETE", "/api/v1/vault/keys/k", "", "If-Match", `"1"`); a.status != 412 {
		t.Fatalf("stale delete: %+v", a)
	}
	if a := f.call(t, "GET", "/api/v1/vault/keys/k", ""); a.m["value"] != 2.0 {
		t.Fatalf("a refused write changed the value: %+v", a)
	}
}

// TestIfMatchRaceHasOneWinner: writers that all read version 1 race over
// real connections; exactly one write lands, the rest get 412, and the
// final value is the winner's.
func TestIfMatchRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	f := newVault(t, nil)
	base := platformtest.Serve(t, f.h)
	if a := f.call(t, "PUT", "/api/v1/vault/keys/counter", `{"value":0}`); a.status != 201 {
		t.Fatal(a)
	}
	const writers = 32
	var wg sync.WaitGroup
	statuses := make([]int, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("PUT", base+"/api/v1/vault/keys/counter", strings.NewReader(fmt.Sprintf(`{"value":%d}`, i+1)))
			req.Header.Set("If-Match", `"1"`)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, s := range statuses {
		switch s {
		case 200:
			if winner >= 0 {
				t.Fatalf("two winners: %d and %d", winner, i)
			}
			winner = i
		case 412:
		default:
			t.Fatalf("writer %d: status %d", i, s)
		}
	}
	if winner < 0 {
		t.Fatal("no winner")
	}
	a := f.call(t, "GET", "/api/v1/vault/keys/counter", "")
	if a.m["version"] != 2.0 || a.m["value"] != float64(winner+1) {
		t.Fatalf("final %+v, winner %d", a, winner)
	}
}

func TestTTLExpiry(t *testing.T) {
	t.Parallel()
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newVault(t, clock)
	a := f.call(t, "PUT", "/api/v1/vault/keys/session", `{"value":"tok","ttl_seconds":60}`)
	if a.status != 201 || a.m["expires_at"] != "2026-01-01T00:01:00Z" {
		t.Fatalf("ttl: %+v", a)
	}
	clock.Advance(59 * time.Second)
	if a = f.call(t, "GET", "/api/v1/vault/keys/session", ""); a.status != 200 {
		t.Fatalf("before expiry: %+v", a)
	}
	clock.Advance(time.Second)
	if a = f.call(t, "GET", "/api/v1/vault/keys/session", ""); a.status != 404 {
		t.Fatalf("after expiry: %+v", a)
	}
	if a = f.call(t, "GET", "/api/v1/vault/keys", ""); strings.Contains(a.raw, "session") {
		t.Fatalf("expired key listed: %+v", a)
	}
	// An expired key is gone for writers too: create starts at version 1.
	if a = f.call(t, "PUT", "/api/v1/vault/keys/session", `{"value":"tok2"}`, "If-None-Match", "*"); a.status != 201 || a.m["version"] != 1.0 {
		t.Fatalf("recreate: %+v", a)
	}
	if _, ok := a.m["expires_at"]; ok {
		t.Fatalf("PUT without ttl kept an expiry: %+v", a)
	}
	if n, err := f.svc.Purge(t.Context()); err != nil || n != 0 {
		t.Fatalf("purge: %d %v", n, err)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	f := newVault(t, nil)
	big := `{"value":"` + strings.Repeat("x", vault.MaxValueBytes) + `"}`
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		details                  string
	}{
		{"long key", "PUT", "/api/v1/vault/keys/" + strings.Repeat("k", 129), `{"value":1}`, nil, 400, "key"},
		{"bad charset", "PUT", "/api/v1/vault/keys/a%20b", `{"value":1}`, nil, 400, "key"},
		{"bad charset get", "GET", "/api/v1/vault/keys/a$b", "", nil, 400, "key"},
		{"dot", "PUT", "/api/v1/vault/keys/..", `{"value":1}`, nil, 400, "key"},
		{"no value", "PUT", "/api/v1/vault/keys/k", `{}`, nil, 400, "value"},
		{"unknown field", "PUT", "/api/v1/vault/keys/k", `{"value":1,"secret":2}`, nil, 400, "secret"},
		{"malformed", "PUT", "/api/v1/vault/keys/k", `{"value":`, nil, 400, "body"},
		{"ttl zero", "PUT", "/api/v1/vault/keys/k", `{"value":1,"ttl_seconds":0}`, nil, 400, "ttl_seconds"},
		{"ttl type", "PUT", "/api/v1/vault/keys/k", `{"value":1,"ttl_seconds":"5"}`, nil, 400, "ttl_seconds"},
		{"too large", "PUT", "/api/v1/vault/keys/k", big, nil, 413, "value"},
		{"patch not object", "PATCH", "/api/v1/vault/keys/k", `{"value":[1]}`, nil, 400, "value"},
		{"bad if-match", "PUT", "/api/v1/vault/keys/k", `{"value":1}`, []string{"If-Match", "abc"}, 400, "If-Match"},
		{"bad if-none-match", "PUT", "/api/v1/vault/keys/k", `{"value":1}`, []string{"If-None-Match", `"3"`}, 400, "If-None-Match"},
		{"if-none-match on patch", "PATCH", "/api/v1/vault/keys/k", `{"value":{}}`, []string{"If-None-Match", "*"}, 400, "If-None-Match"},
		{"bad if-match on delete", "DELETE", "/api/v1/vault/keys/k", "", []string{"If-Match", "abc"}, 400, "If-Match"},
		{"NUL in prefix", "GET", "/api/v1/vault/keys?prefix=a%00b", "", nil, 400, "prefix"},
		{"invalid UTF-8 in prefix", "GET", "/api/v1/vault/keys?prefix=%FF", "", nil, 400, "prefix"},
		{"NUL in after", "GET", "/api/v1/vault/keys?after=%00", "", nil, 400, "after"},
		{"invalid UTF-8 in after", "GET", "/api/v1/vault/keys?after=k%C3%28", "", nil, 400, "after"},
		{"prefix outside the key alphabet", "GET", "/api/v1/vault/keys?prefix=a%20b", "", nil, 400, "prefix"},
		{"prefix longer than a key", "GET", "/api/v1/vault/keys?prefix=" + strings.Repeat("k", 129), "", nil, 400, "prefix"},
	}
	for _, tc := range cases {
		a := f.call(t, tc.method, tc.path, tc.body, tc.hdr...)
		if a.status != tc.status || a.m["details"] != tc.details || !strings.Contains(fmt.Sprint(a.m["message"]), tc.details) {
			t.Errorf("%s: %d %.300s", tc.name, a.status, a.raw)
		}
	}
	if a := f.call(t, "GET", "/api/v1/vault/stats", ""); a.m["keys"] != 0.0 {
		t.Fatalf("bad input wrote something: %+v", a)
	}
}

// TestWrongKeyFailsAtStart: a vault reopened under another key file does
// not start (no garbage values), and names the file.
func TestWrongKeyFailsAtStart(t *testing.T) {
	t.Parallel()
	f := newVault(t, nil)
	if a := f.call(t, "PUT", "/api/v1/vault/keys/k", `{"value":"plaintext-marker-7731"}`); a.status != 201 {
		t.Fatal(a)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	_, err := vault.New(f.deps, &vault.Settings{KeyFile: other})
	if err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "not the key") {
		t.Fatalf("wrong key: %v", err)
	}
	// The right key still opens it.
	again, err := vault.New(f.deps, &vault.Settings{KeyFile: f.key})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	rec, err := again.Get(t.Context(), "k")
	if err != nil || string(rec.Value) != `"plaintext-marker-7731"` {
		t.Fatalf("%s %v", rec.Value, err)
	}
	raw, err := os.ReadFile(filepath.Join(f.deps.DataDir, "store.db"))
	if err != nil || bytes.Contains(raw, []byte("plaintext-marker-7731")) {
		t.Fatalf("plaintext value in the store file (%v)", err)
	}
}
