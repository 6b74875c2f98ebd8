package reqpolicy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
)

// echoService answers one route.
type echoService struct{}

func (echoService) Info() platform.Info {
	return platform.Info{Name: "echo", Title: "echo", Version: "1"}
}
func (echoService) Routes() []platform.Route {
	return []platform.Route{{Method: http.MethodGet, Path: "/api/v1/echo", Summary: "echo",
		Handler: func(c fiber.Ctx) error { return c.SendString("secret") }}}
}

// TestServicePortServesTrustedLocalUsersOnly: a service's own port
// answers root and the agent's own user; another local user gets 401 on
// every route (health included), unless --trusted-uids names it.
func TestServicePortServesTrustedLocalUsersOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		trusted string
		want    int
	}{{"", 401}, {"1000," + "65534", 200}} {
		deps := platformtest.ServiceDeps(t, "echo")
		deps.Common.TrustedUIDs = c.trusted
		h, err := contract.NewServiceHost(echoService{}, deps)
		if err != nil {
			t.Fatal(err)
		}
		url := platformtest.Serve(t, h)
		for _, path := range []string{"/api/v1/echo", "/health"} {
			status, body := platformtest.AsUser(t, platformtest.Nobody, "GET", url+path, "")
			if status != c.want {
				t.Fatalf("--trusted-uids %q, uid %d %s: %d %s", c.trusted, platformtest.Nobody, path, status, body)
			}
			if c.want == 401 && (!strings.Contains(body, `"code":"UNAUTHORIZED"`) || strings.Contains(body, "secret")) {
				t.Fatalf("refusal body: %s", body)
			}
		}
		// This process (root, the agent's own user) is served.
		if status, _, raw := platformtest.Do(t, mustGet(t, url+"/api/v1/echo")); status != 200 || raw != "secret" {
			t.Fatalf("own user: %d %s", status, raw)
		}
	}
	deps := platformtest.ServiceDeps(t, "echo")
	deps.Common.TrustedUIDs = "12,abc"
	if _, err := contract.NewServiceHost(echoService{}, deps); err == nil || !strings.Contains(err.Error(), "--trusted-uids") {
		t.Fatalf("bad --trusted-uids: %v", err)
	}
}

func mustGet(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
