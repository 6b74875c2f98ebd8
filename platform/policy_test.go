package platform_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
	"deckhand/platform/store"
)

// tokenAuth accepts "Bearer user:<id>" and "Bearer admin:<id>".
var tokenAuth = platform.AuthenticatorFunc(func(c fiber.Ctx) (*auth.Principal, error) {
	h := c.Get("Authorization")
	role, id, ok := strings.Cut(strings.TrimPrefix(h, "Bearer "), ":")
	if !ok || (role != auth.RoleUser && role != auth.RoleAdmin) {
		return nil, fault.Errorf(fault.CodeUnauthorized, "bad credential")
	}
	return &auth.Principal{UserID: id, Role: role, Kind: auth.KindToken, TokenID: "tok-" + id}, nil
})

// whoami answers the caller as domain code sees it: from the context only.
func whoami(c fiber.Ctx) error {
	p, _ := auth.FromContext(c.Context())
	out := map[string]any{"ip": auth.ClientIP(c.Context())}
	if p != nil {
		out["user"], out["role"] = p.UserID, p.Role
	}
	return platform.JSON(c, 200, out)
}

// ownerOnly is a resource check: only user "owner" may touch {id} "mine".
func ownerOnly(ctx context.Context, param func(string) string) error {
	p, _ := auth.FromContext(ctx)
	if param("id") != "mine" || p.UserID != "owner" {
		return fault.Errorf(fault.CodeForbidden, "not your thing")
	}
	return nil
}

func policyHost(t *testing.T, clock clockpkg.Clock) *platform.Host {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	perIP := ratelimit.RateLimit{Name: "tries", By: ratelimit.ByIP, N: 2, Per: time.Minute}
	perAcct := ratelimit.RateLimit{Name: "acct", By: ratelimit.ByAccount, N: 1, Per: time.Hour}
	return platform.NewHost(platform.HostConfig{Logger: quiet, Style: platform.EnvelopeErrors, Info: platform.Info{Name: "p", Title: "p"},
		Auth: tokenAuth, Limiter: ratelimit.NewStoreLimiter(db, clock)}, []platform.Route{
		{Method: "GET", Path: "/open", Summary: "public", Policy: platform.Public, Handler: whoami},
		{Method: "GET", Path: "/default", Summary: "no policy declared", Handler: whoami},
		{Method: "GET", Path: "/admin", Summary: "admins", Policy: platform.Admin, Handler: whoami},
		{Method: "GET", Path: "/things/{id}", Summary: "owner", Handler: whoami,
			Policy: platform.Resource("thing.owner", "the thing's owner", ownerOnly)},
		{Method: "GET", Path: "/limited", Summary: "2 per minute per IP", Policy: platform.Public, Limits: []ratelimit.RateLimit{perIP}, Handler: whoami},
		{Method: "GET", Path: "/limited-too", Summary: "shares the budget", Policy: platform.Public, Limits: []ratelimit.RateLimit{perIP}, Handler: whoami},
		{Method: "GET", Path: "/per-account", Summary: "1 per hour per account", Limits: []ratelimit.RateLimit{perAcct}, Handler: whoami},
		{Method: "GET", Path: "/net", Summary: "net/http sees the caller", Policy: platform.SignedIn,
			HTTP: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p, _ := auth.FromContext(r.Context())
				_ = json.NewEncoder(w).Encode(map[string]any{"user": p.UserID, "ip": auth.ClientIP(r.Context())})
			})},
	})
}

func call(t *testing.T, h *platform.Host, path, bearer string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", serve(t, h)+path, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, resp.Header, m
}

func TestPolicyEnforcedBeforeHandler(t *testing.T) {
	t.Parallel()
	h := policyHost(t, clockpkg.NewFakeClock(time.Now()))
	cases := []struct {
		path, bearer string
		status       int
		user         string
	}{
		{"/open", "", 200, ""},
		{"/open", "garbage", 200, ""}, // public routes never look at credentials
		{"/default", "", 401, ""},
		{"/default", "garbage", 401, ""},
		{"/default", "user:u1", 200, "u1"},
		{"/admin", "", 401, ""},
		{"/admin", "user:u1", 403, ""},
		{"/admin", "admin:a1", 200, "a1"},
		{"/things/mine", "user:owner", 200, "owner"},
		{"/things/mine", "user:u2", 403, ""},
		{"/things/theirs", "user:owner", 403, ""},
		{"/things/mine", "", 401, ""},
		{"/net", "user:u3", 200, "u3"},
		{"/net", "", 401, ""},
	}
	for _, tc := range cases {
		status, _, body := call(t, h, tc.path, tc.bearer)
		if status != tc.status {
			t.Errorf("%s as %q: %d, want %d (%v)", tc.path, tc.bearer, status, tc.status, body)
			continue
		}
		if status == 200 {
			if body["user"] != nil && body["user"] != tc.user || tc.user != "" && body["user"] != tc.user {
				t.Errorf("%s as %q: handler saw user %v, want %q", tc.path, tc.bearer, body["user"], tc.user)
			}
			if body["ip"] != "127.0.0.1" {
				t.Errorf("%s: client IP in context %v", tc.path, body["ip"])
			}
		}
	}
}

func TestDeclaredRateLimitAnswers429(t *testing.T) {
	t.Parallel()
	clock := clockpkg.NewFakeClock(time.Now())
	h := policyHost(t, clock)
	for i, path := range []string{"/limited", "/limited-too"} {
		if status, _, body := call(t, h, path, ""); status != 200 {
			t.Fatalf("request %d: %d %v", i+1, status, body)
		}
	}
	status, hdr, body := call(t, h, "/limited", "")
	secs, err := strconv.Atoi(hdr.Get("Retry-After"))
	if status != 429 || err != nil || secs < 1 || secs > 60 || body["error"] != "Too Many Requests" {
		t.Fatalf("third request in the window: %d Retry-After %q %v", status, hdr.Get("Retry-After"), body)
	}
	clock.Advance(61 * time.Second)
	if status, _, _ := call(t, h, "/limited-too", ""); status != 200 {
		t.Fatalf("after the window: %d", status)
	}
	// Per account: another account has its own budget.
	for _, who := range []string{"user:a", "user:b"} {
		if status, _, _ := call(t, h, "/per-account", who); status != 200 {
			t.Fatalf("%s first: %d", who, status)
		}
	}
	if status, hdr, _ := call(t, h, "/per-account", "user:a"); status != 429 || hdr.Get("Retry-After") != "3600" {
		t.Fatalf("per account second: %d %q", status, hdr.Get("Retry-After"))
	}
}

func TestLimiterSweepsEndedWindows(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := clockpkg.NewFakeClock(time.Now())
	l := ratelimit.NewStoreLimiter(db, clock)
	short := ratelimit.RateLimit{Name: "short", By: ratelimit.ByValue, N: 1, Per: time.Minute}
	long := ratelimit.RateLimit{Name: "long", By: ratelimit.ByValue, N: 1, Per: time.Hour}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := l.Allow(ctx, short.On(strconv.Itoa(i)), long.On(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Check(ctx, long.On("1")); fault.AsError(err).Code != fault.CodeTooManyRequests {
		t.Fatalf("check of a full window: %v", err)
	}
	count := func() int {
		n := 0
		_ = db.View(func(tx *store.Tx) error { n = tx.Count(ratelimit.LimitBucket); return nil })
		return n
	}
	if n := count(); n != 12 {
		t.Fatalf("%d records, want 6 windows + 6 index entries", n)
	}
	clock.Advance(2 * time.Minute)
	if n, err := l.Sweep(ctx); err != nil || n != 3 {
		t.Fatalf("swept %d (%v), want the 3 short windows", n, err)
	}
	if n := count(); n != 6 {
		t.Fatalf("%d records left, want the long ones", n)
	}
	if err := l.Allow(ctx, short.On("1")); err != nil {
		t.Fatalf("a swept key starts afresh: %v", err)
	}
}

func TestOpenAPIShowsPolicyAndLimits(t *testing.T) {
	t.Parallel()
	h := policyHost(t, clockpkg.SystemClock{})
	raw, err := h.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components map[string]map[string]any            `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Components["securitySchemes"]["bearerAuth"] == nil {
		t.Fatalf("no bearerAuth scheme: %v", doc.Components)
	}
	for path, want := range map[string]string{"/open": "public", "/default": "signed-in", "/admin": "admin", "/things/{id}": "thing.owner", "/health": "public"} {
		op := doc.Paths[path]["get"]
		if op["x-policy"] != want {
			t.Errorf("%s: x-policy %v, want %s", path, op["x-policy"], want)
		}
		sec, _ := json.Marshal(op["security"])
		if (want == "public") != (string(sec) == "[]") {
			t.Errorf("%s: security %s", path, sec)
		}
	}
	op := doc.Paths["/limited"]["get"]
	lims, _ := json.Marshal(op["x-rate-limits"])
	if string(lims) != `[{"by":"ip","counts":"requests","limit":2,"name":"tries","window_seconds":60}]` {
		t.Errorf("x-rate-limits %s", lims)
	}
	if _, ok := op["responses"].(map[string]any)["429"]; !ok {
		t.Errorf("no 429 answer documented")
	}
	// A container host (no Authenticator) shows no policy for undeclared routes.
	plain := platform.NewHost(platform.HostConfig{Logger: quiet, Info: platform.Info{Name: "c"}}, testRoutes())
	raw, _ = plain.OpenAPIJSON()
	if strings.Contains(string(raw), "bearerAuth") || strings.Count(string(raw), "x-policy") != 3 {
		t.Errorf("container document: %s", raw)
	}
}

func TestCredentialedPolicyNeedsAnAuthenticator(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("an admin route on a host without Authenticator was accepted")
		}
	}()
	platform.NewHost(platform.HostConfig{Logger: quiet}, []platform.Route{
		{Method: "GET", Path: "/a", Summary: "a", Policy: platform.Admin, Handler: whoami}})
}
