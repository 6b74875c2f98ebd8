// Package platformtest holds test helpers shared by every service's tests:
// the route-conformance check (no route served outside the service's OpenAPI
// document, as E2B's envd enforces) and a loopback server for a Host.
package platformtest

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"deckhand/platform"
)

// Serve starts h on a free loopback port for the test's lifetime, through
// platform.ServeUntil like every runner, and returns its base URL.
func Serve(t testing.TB, h *platform.Host) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = platform.ServeUntil(ctx, h, ln, 5*time.Second) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

// CheckRoutesDocumented fails the test when the host serves a method and path
// that its OpenAPI document does not list.
func CheckRoutesDocumented(t testing.TB, h *platform.Host) {
	t.Helper()
	raw, err := h.OpenAPIJSON()
	if err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi document is not JSON: %v", err)
	}
	documented := map[string]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			documented[strings.ToUpper(m)+" "+normalize(p)] = true
		}
	}
	extra := map[string]bool{"PROPFIND": true, "PROPPATCH": true, "MKCOL": true, "COPY": true, "MOVE": true,
		"LOCK": true, "UNLOCK": true, "CONNECT": true, "TRACE": true}
	for _, r := range h.App().GetRoutes(true) {
		key := r.Method + " " + normalize(r.Path)
		if documented[key] {
			continue
		}
		if r.Method == "HEAD" && documented["GET "+normalize(r.Path)] {
			continue // Fiber answers HEAD for every GET
		}
		if extra[r.Method] && documented["GET "+normalize(r.Path)] {
			continue // WebDAV methods of a MethodAny route
		}
		t.Errorf("route %s %s is served but missing from the OpenAPI document", r.Method, r.Path)
	}
}

// normalize makes "/a/:id/*" and "/a/{id}/{rest}" comparable.
func normalize(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		switch {
		case strings.HasPrefix(s, ":"), strings.HasPrefix(s, "{"):
			parts[i] = "{}"
		case s == "*" || s == "+":
			parts[i] = "{}"
		}
	}
	return strings.Join(parts, "/")
}
