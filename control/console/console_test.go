package console_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/console"
	"deckhand/control/domain"
	"deckhand/control/identity"
	"deckhand/platform"
	"deckhand/platform/auth"
)

// noIdentity is an identity domain that knows nobody.
type noIdentity struct{}

var errNobody = errors.New("nobody")

func (noIdentity) Login(context.Context, identity.LoginInput) (*identity.LoginAnswer, error) {
	return nil, errNobody
}
func (noIdentity) VerifyTwoFactor(context.Context, identity.Verify2FARequest) (*identity.LoginResult, error) {
	return nil, errNobody
}
func (noIdentity) Refresh(context.Context, identity.RefreshRequest) (*identity.LoginResult, error) {
	return nil, errNobody
}
func (noIdentity) Logout(context.Context, struct{}) error          { return errNobody }
func (noIdentity) Me(context.Context) (*identity.User, error)      { return nil, errNobody }
func (noIdentity) Resolve(string, string) (*auth.Principal, error) { return nil, errNobody }
func (noIdentity) Routes() []platform.Route                        { return nil }

func host(t *testing.T) *platform.Host {
	t.Helper()
	c, err := console.New(domain.Env[console.Config]{Config: console.Config{Identity: noIdentity{}}})
	if err != nil {
		t.Fatal(err)
	}
	return platform.NewHost(platform.HostConfig{Style: platform.EnvelopeErrors, Middleware: []fiber.Handler{c.Pages}})
}

// TestPages: the console answers its own pages (as its router lists them)
// for GET and HEAD, with its CSP; anything else goes on to the routes.
// No answer may be framed.
func TestPages(t *testing.T) {
	t.Parallel()
	h := host(t)
	cases := []struct {
		method, path, enc string
		status            int
		page              bool
	}{
		{"GET", "/", "", 200, true},
		{"HEAD", "/", "", 200, true},
		{"GET", "/login", "", 200, true},
		{"GET", "/auth/verify-email", "", 200, true},
		{"GET", "/projects/p1", "", 200, true},
		{"GET", "/containers/c-1", "", 200, true},
		{"GET", "/projects/", "", 404, false},
		{"GET", "/projects/a.b", "", 404, false},
		{"GET", "/projects/p1/x", "", 404, false},
		{"GET", "/api/v1/projects", "", 404, false},
		{"POST", "/login", "", 404, false},
		{"GET", "/nope", "", 404, false},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.path, nil)
		resp, err := h.App().Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != c.status || (csp == console.CSP) != c.page {
			t.Fatalf("%s %s: %d, CSP %q: %s", c.method, c.path, resp.StatusCode, csp, body)
		}
		if c.method == "HEAD" && len(body) != 0 {
			t.Fatalf("HEAD answered a body")
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || !slices.Contains(resp.Header.Values("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Fatalf("%s %s may be framed: %v", c.method, c.path, resp.Header)
		}
	}
}

// TestCSRFToken: one session, one token; another session, another.
func TestCSRFToken(t *testing.T) {
	t.Parallel()
	a, b := console.CSRFToken("session-a"), console.CSRFToken("session-b")
	if a == b || a != console.CSRFToken("session-a") || len(a) < 40 {
		t.Fatalf("tokens %q %q", a, b)
	}
}
