package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"deckhand/display/api"
	"deckhand/platform/contract"
)

// TestEveryInputRouteIsDesktop walks the service's route table: every
// route that types, clicks, acts on an element or window, sets the
// clipboard or decides who drives is judged as program desktop; the
// routes that only read stay services. The takeover view and its
// WebSocket are desktop unless asked in mode view.
func TestEveryInputRouteIsDesktop(t *testing.T) {
	t.Parallel()
	param := regexp.MustCompile(`\{[^}]+\}`)
	reads := map[string]bool{"POST /api/v1/display/window/search": true, "POST /api/v1/display/recordings": true,
		"POST /api/v1/display/recordings/x/stop": true, "DELETE /api/v1/display/recordings/x": true}
	view := func(n string) string {
		if n == "mode" {
			return "view"
		}
		return ""
	}
	desktop, services := 0, 0
	for _, r := range api.NewUnavailable("test").Routes() {
		path := param.ReplaceAllString(r.Path, "x")
		key := r.Method + " " + path
		vnc := strings.HasSuffix(path, "/vnc/") || strings.HasSuffix(path, "/vnc/websockify")
		want := contract.ProgramDesktop
		if (r.Method == http.MethodGet && !vnc) || reads[key] {
			want = contract.ProgramServices
		}
		if got := contract.RouteProgram("display", r.Method, path, nil); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
		if vnc {
			if got := contract.RouteProgram("display", r.Method, path, view); got != contract.ProgramServices {
				t.Errorf("%s?mode=view: %s, want services", key, got)
			}
		}
		if want == contract.ProgramDesktop {
			desktop++
		} else {
			services++
		}
	}
	if desktop < 30 || services < 15 {
		t.Fatalf("only %d desktop and %d services routes: the table was not walked", desktop, services)
	}
	// Spellings the router takes for the same route are judged as it.
	for _, p := range []string{"/api/v1/display/VNC/websockify/", "/api/v1/display/vnc/x/../websockify", "/api/v1/display//vnc/",
		"/api/v1/display/vnc%2Fwebsockify", "/api/v1/display/%zz"} {
		if got := contract.RouteProgram("display", "GET", p, nil); got != contract.ProgramDesktop {
			t.Errorf("GET %s: %s, want desktop", p, got)
		}
	}
	if got := contract.RouteProgram("display", "POST", "/api/v1/display/recordings/x/../../keyboard/type", nil); got != contract.ProgramDesktop {
		t.Errorf("a dot-dot spelling of keyboard/type: %s", got)
	}
	if got := contract.RouteProgram("notes", "POST", "/api/v1/notes", nil); got != contract.ProgramServices {
		t.Errorf("another service: %s", got)
	}
}
