package identity_test

import (
	"regexp"
	"testing"

	"deckhand/platform/platformtest"
)

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// Every route that is not public answers 401 without a credential, and so
// do the public ones that take their own Bearer token.
func TestRouteSweepWithoutCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ownBearer := map[string]bool{
		"POST /api/v1/users/auth/refresh":    true,
		"POST /api/v1/auth/intent/cancel":    true,
		"POST /api/v1/users/auth/2fa/verify": true,
	}
	n := 0
	for _, r := range e.svc.Routes() {
		key := r.Method + " " + r.Path
		if r.Policy.IsPublic() && !ownBearer[key] {
			continue
		}
		n++
		path := pathParam.ReplaceAllString(r.Path, "x")
		var body any
		if r.Method != "GET" && r.Method != "DELETE" {
			body = map[string]any{}
		}
		for _, bearer := range []string{"", "not-a-jwt", "svc_unknown", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."} {
			if bearer != "" && key == "POST /api/v1/auth/intent/cancel" {
				continue // idempotent: an unknown token is "already cancelled", 204
			}
			res := e.call(r.Method, path, body, bearer)
			if res.status != 401 || res.str("error") != "Unauthorized" {
				t.Errorf("%s with %q: %d %s", key, bearer, res.status, res.raw)
			}
		}
	}
	if n < 12 {
		t.Fatalf("only %d guarded routes swept", n)
	}
	platformtest.CheckRoutesDocumented(t, e.host)
}
