package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"deckhand/display/api"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

// validBodies holds a body each POST route accepts: without a display it
// answers 503, since a request's own rules are checked first.
var validBodies = map[string]string{
	"/window/search": `{"name":"x"}`, "/input/act": `{"action":"move","x":1,"y":1}`,
	"/input/batch": `{"steps":[{"action":"key","key":"a"}]}`, "/mouse/move": `{"x":1,"y":1}`,
	"/mouse/move-relative": `{"dx":1}`, "/mouse/click": `{}`, "/mouse/double-click": `{}`, "/mouse/down": `{}`,
	"/mouse/up": `{}`, "/mouse/scroll": `{}`, "/keyboard/type": `{"text":"a"}`, "/keyboard/key": `{"key":"a"}`,
	"/keyboard/key-down": `{"key":"a"}`, "/keyboard/key-up": `{"key":"a"}`, "/input/click-at": `{"x":1,"y":1}`,
	"/input/type-at": `{"x":1,"y":1,"text":"a"}`, "/input/drag": `{"from":{"x":1,"y":1},"to":{"x":2,"y":2}}`,
	"/input/select": `{"from":{"x":1,"y":1},"to":{"x":2,"y":2}}`, "/input/wait": `{"until":"timeout","timeout_ms":1}`,
	"/input/sleep": `{"duration_ms":1}`, "/window/focus": `{}`, "/window/raise": `{}`, "/window/minimize": `{}`,
	"/window/close": `{}`, "/window/move": `{"x":1,"y":1}`, "/window/resize": `{"width":1,"height":1}`,
	"/clipboard": `{"text":"a"}`, "/input/reset": `{}`, "/accessibility/1.5~3/click": `{}`,
	"/accessibility/1.5~3/focus": `{}`, "/accessibility/1.5~3/set-value": `{"value":"x"}`,
	"/accessibility/1.5~3/action": `{"name":"Click"}`, "/accessibility/1.5~3/scroll-into-view": `{}`,
	"/recordings": `{"max_seconds":5}`, "/recordings/" + rid + "/stop": `{}`, "/takeover": `{"reason":"x"}`,
}

const rid = "0b7e3c55-4a5f-4d0e-9d51-2b8f1f0e7a11"

// Without a display every route but the index answers 503 to a valid
// request; an invalid one is still a 400 naming the field (the request's
// own rules come first, the display second, the screen's bounds last).
func TestUnavailableAnswers503Everywhere(t *testing.T) {
	t.Parallel()
	svc := api.NewUnavailable("no X display is configured")
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"}, HealthStatus: svc.HealthStatus,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, svc.Routes())
	n := 0
	for _, r := range svc.Routes() {
		path := strings.ReplaceAll(strings.ReplaceAll(r.Path, "{windowId}", "123"), "{elementId}", "1.5~3")
		path = strings.ReplaceAll(path, "{id}", rid)
		if strings.HasSuffix(path, "/search") && r.Method == "GET" {
			path += "?role=push+button"
		}
		var body io.Reader
		if r.Method == "POST" {
			b, ok := validBodies[strings.TrimPrefix(path, "/api/v1/display")]
			if !ok {
				t.Errorf("POST %s: no valid body in this test", path)
				continue
			}
			body = strings.NewReader(b)
		}
		req := platformtest.NewRequest(r.Method, path, body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := host.App().Test(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		// stored recordings are read without a display: there are none here
		if strings.HasPrefix(r.Path, "/api/v1/display/recordings") && !(r.Method == "POST" && r.Path == "/api/v1/display/recordings") {
			list := r.Path == "/api/v1/display/recordings" || r.Path == "/api/v1/display/recordings/list"
			if want := map[bool]int{true: 200, false: 404}[list]; resp.StatusCode != want {
				t.Errorf("%s %s without a display: %d %s, want %d", r.Method, path, resp.StatusCode, b, want)
			}
			continue
		}
		// the takeover's state and the noVNC client's files need no display
		if r.Path == "/api/v1/display/takeover" || r.Path == "/api/v1/display/vnc/{file...}" {
			continue
		}
		if r.Path == "/api/v1/display/" {
			var idx api.Index
			_ = json.Unmarshal(b, &idx)
			if resp.StatusCode != 200 || idx.Available || idx.Reason == "" || len(idx.Endpoints) != len(svc.Routes()) {
				t.Errorf("index: %d %s", resp.StatusCode, b)
			}
			continue
		}
		var e fault.ContainerError
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != 503 || e.Code != "DISPLAY_UNAVAILABLE" || !strings.Contains(e.Message, "no X display is configured") {
			t.Errorf("%s %s: %d %s", r.Method, path, resp.StatusCode, b)
		}
		n++
	}
	if n < 37 {
		t.Fatalf("only %d display routes", n)
	}
	req := platformtest.NewRequest("POST", "/api/v1/display/mouse/move", strings.NewReader(`{"x":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, _ := host.App().Test(req)
	var e fault.ContainerError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 400 || e.Details != "y" {
		t.Errorf("invalid body without a display: %d %+v, want 400 naming y", resp.StatusCode, e)
	}
	resp, _ = host.App().Test(platformtest.NewRequest("GET", "/health", nil))
	var h platform.Health
	_ = json.NewDecoder(resp.Body).Decode(&h)
	if h.Status != "unavailable" || !strings.Contains(h.Detail, "no X display") {
		t.Fatalf("health = %+v", h)
	}
}

// Every path of docs/spec/interface.md 4.12's Display row, and the
// screenshots the MCP tools are, is in the route table (and so in the
// OpenAPI document).
func TestRouteTableCoversTheInterface(t *testing.T) {
	t.Parallel()
	want := []string{
		"GET /", "GET /info", "GET /screenshots", "GET /clipboard", "POST /clipboard", "GET /windows",
		"GET /window/{windowId}/properties", "POST /mouse/click", "POST /mouse/double-click", "POST /mouse/move",
		"POST /mouse/move-relative", "POST /mouse/down", "POST /mouse/up", "POST /mouse/scroll",
		"GET /mouse/location", "POST /keyboard/type", "POST /keyboard/key", "POST /keyboard/key-down",
		"POST /keyboard/key-up", "POST /window/focus", "POST /window/move", "POST /window/resize",
		"POST /window/minimize", "POST /window/close", "POST /window/raise", "POST /window/search",
		"GET /window/active", "GET /window/{windowId}/geometry", "GET /window/{windowId}/name",
		"POST /input/click-at", "POST /input/type-at", "POST /input/drag", "POST /input/select",
		"POST /input/act", "POST /input/wait", "POST /input/batch", "POST /input/reset",
		"GET /input/display-geometry", "GET /screenshots/scaled", "GET /screenshots/marked",
	}
	svc := api.NewUnavailable("test")
	have := map[string]bool{}
	for _, r := range svc.Routes() {
		have[r.Method+" "+strings.TrimPrefix(r.Path, "/api/v1/display")] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("missing %s", w)
		}
	}
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"}}, svc.Routes())
	doc, err := host.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		path := "/api/v1/display" + strings.SplitN(w, " ", 2)[1]
		if !strings.Contains(string(doc), `"`+path+`"`) {
			t.Errorf("openapi lacks %s", path)
		}
	}
}

// TestQueryIsCheckedBeforeTheHandler: the declared query parameters are
// parsed by the host, so a bad one is a 400 naming it even when the
// handler could only answer 503; the grammar is the platform's (enums are
// case-sensitive, booleans are true, false, 1 or 0; the old handlers took
// PRIMARY, IMAGE, yes and no).
func TestQueryIsCheckedBeforeTheHandler(t *testing.T) {
	t.Parallel()
	svc := api.NewUnavailable("no X display is configured")
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, svc.Routes())
	for _, tc := range []struct {
		query   string
		status  int
		details string
	}{
		{"/clipboard?selection=PRIMARY", 400, "selection"},
		{"/clipboard?format=IMAGE", 400, "format"},
		{"/clipboard?targets=yes", 400, "targets"},
		{"/clipboard?selection=primary&format=image&targets=1", 503, ""},
		{"/screenshots?cursor=no", 400, "cursor"},
		{"/screenshots?quality=101", 400, "quality"},
		{"/screenshots?scale=0", 400, "scale"},
		{"/screenshots?width=5&width=6", 400, "width"},
		{"/screenshots?format=jpg&quality=5&cursor=0&scale=0.5", 503, ""},
		{"/screenshots/scaled?max_width=0", 400, "max_width"},
		{"/screenshots/scaled?max_width=wide", 400, "max_width"},
		{"/screenshots/scaled?max_width=800", 503, ""},
	} {
		resp, err := host.App().Test(platformtest.NewRequest("GET", "/api/v1/display"+tc.query, nil))
		if err != nil {
			t.Fatal(err)
		}
		var e fault.ContainerError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.details != "" && (e.Details != tc.details || !strings.Contains(e.Message, tc.details))) {
			t.Errorf("%s: %d %+v, want %d naming %q", tc.query, resp.StatusCode, e, tc.status, tc.details)
		}
	}
}
