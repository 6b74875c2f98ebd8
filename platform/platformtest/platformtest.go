// Package platformtest holds test helpers every service's tests share, so
// each service proves the same properties of its host the same way.
package platformtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"deckhand/platform"
)

var (
	fiberParam   = regexp.MustCompile(`:[A-Za-z0-9_]+\??|\*[0-9]*|\+[0-9]*`)
	openapiParam = regexp.MustCompile(`\{[^}]+\}`)
)

// canonical turns both "/a/:id/*" and "/a/{id}/{rest}" into "/a/{}/{}".
func canonical(path string) string {
	return openapiParam.ReplaceAllString(fiberParam.ReplaceAllString(path, "{}"), "{}")
}

// CheckRoutesDocumented fails t for every route the host's Fiber app serves
// that its served /openapi.json does not list under the same method and path.
// Automatic HEAD routes count as documented when their GET is; routes
// registered with platform.MethodAny count through the document's x-methods.
func CheckRoutesDocumented(t testing.TB, h *platform.Host) {
	t.Helper()
	resp, err := h.App().Test(httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if err != nil {
		t.Fatalf("GET /openapi.json: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, raw)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	documented := map[string]map[string]bool{} // canonical path → methods
	for p, item := range doc.Paths {
		c := canonical(p)
		if documented[c] == nil {
			documented[c] = map[string]bool{}
		}
		for m, op := range item {
			documented[c][strings.ToUpper(m)] = true
			var o struct {
				XMethods []string `json:"x-methods"`
			}
			if json.Unmarshal(op, &o) == nil {
				if len(o.XMethods) > 0 {
					documented[c]["*"] = true // a MethodAny route answers every method
				}
			}
		}
	}
	served := 0
	for _, r := range h.App().GetRoutes(true) {
		c := canonical(r.Path)
		methods := documented[c]
		ok := methods[r.Method] || methods["*"] || (r.Method == http.MethodHead && methods[http.MethodGet])
		if !ok {
			t.Errorf("route %s %s is served but missing from the OpenAPI document", r.Method, r.Path)
		}
		served++
	}
	if served == 0 {
		t.Errorf("the host serves no routes at all")
	}
}
