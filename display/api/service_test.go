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
			if want := map[bool]int{true: 200, false: 404}[r.Path == "/api/v1/display/recordings"]; resp.StatusCode != want {
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

// Every path of docs/spec/interface.md 4.12's Display row is in the route table (and
// so in the OpenAPI document).
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
		"GET /input/display-geometry",
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

func TestParseKey(t *testing.T) {
	t.Parallel()
	ok := []struct {
		name string
		sym  api.Keysym
	}{
		{"Return", 0xff0d}, {"enter", 0xff0d}, {"ENTER", 0xff0d}, {"Page_Up", 0xff55}, {"pageup", 0xff55},
		{"PgDn", 0xff56}, {"ArrowLeft", 0xff51}, {"ctrl", 0xffe3}, {"cmd", 0xffeb}, {"F12", 0xffc9},
		{"a", 'a'}, {"A", 'A'}, {"é", 0xe9}, {"€", 0x010020ac}, {"+", '+'}, {" ", ' '}, {"0xff1b", 0xff1b},
		{"KP_5", 0xffb5}, {"numpad5", 0xffb5}, {"XF86AudioMute", 0x1008ff12}, {"volumeup", 0x1008ff13},
	}
	for _, c := range ok {
		got, err := api.ParseKey("key", c.name)
		if err != nil || got != c.sym {
			t.Errorf("ParseKey(%q) = %#x, %v; want %#x", c.name, got, err, c.sym)
		}
	}
	bad := []struct{ name, match string }{{"entr", "enter"}, {"Retrun", "Return"}, {"escap", "Escape"},
		{"F40", "F4"}, {"shfit", "shift"}}
	for _, c := range bad {
		_, err := api.ParseKey("key", c.name)
		e, isErr := err.(*fault.Error)
		if !isErr || e.Code != fault.CodeInvalid || !strings.Contains(e.Details, c.match) || !strings.HasPrefix(e.Message, "key: unknown key name") {
			t.Errorf("ParseKey(%q) = %v", c.name, err)
		}
	}
	if _, err := api.ParseKey("key", "zzzzzzzzzz"); err == nil || !strings.Contains(err.Error(), "use an X keysym name") {
		t.Errorf("no-match hint missing: %v", err)
	}
	sym, mods, err := api.ParseChord("key", "ctrl+shift+t", []string{"alt"})
	if err != nil || sym != 't' || len(mods) != 3 || mods[0] != 0xffe3 || mods[1] != 0xffe1 || mods[2] != 0xffe9 {
		t.Errorf("chord = %#x %v %v", sym, mods, err)
	}
	if sym, mods, err := api.ParseChord("key", "ctrl++", nil); err != nil || sym != '+' || len(mods) != 1 {
		t.Errorf("ctrl++ = %#x %v %v", sym, mods, err)
	}
}

// TestScreenshotQuery: the binder checks the query's grammar and ranges
// before the display is needed (400 naming the parameter even where the
// handler could only answer 503), then Options checks the region against
// the screen.
func TestScreenshotQuery(t *testing.T) {
	t.Parallel()
	svc := api.NewUnavailable("no X display is configured")
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, svc.Routes())
	for _, bad := range []struct{ query, field string }{
		{"format=bmp", "format"}, {"format=PNG", "format"}, {"quality=0", "quality"}, {"quality=x", "quality"},
		{"scale=0", "scale"}, {"scale=1.01", "scale"}, {"height=0", "height"}, {"cursor=2", "cursor"},
		{"cursor=yes", "cursor"}, {"x=1&x=2", "x"}, {"x=99999999999", "x"},
	} {
		resp, err := host.App().Test(platformtest.NewRequest("GET", "/api/v1/display/screenshots?"+bad.query, nil))
		if err != nil {
			t.Fatal(err)
		}
		var e fault.ContainerError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Details != bad.field || !strings.Contains(e.Message, bad.field) {
			t.Errorf("%s: %d %+v", bad.query, resp.StatusCode, e)
		}
	}
	screen := api.Rect{Width: 1920, Height: 1080}
	def := api.ScreenshotQuery{Format: "png", Quality: 80, Scale: 1}
	o, err := def.Options(screen)
	if err != nil || o.Format != "png" || o.Quality != 80 || o.Region != screen || o.Scale != 1 || o.Cursor {
		t.Fatalf("defaults = %+v %v", o, err)
	}
	o, err = api.ScreenshotQuery{Format: "jpg", Quality: 55, X: 100, Y: 50, Scale: 0.25, Cursor: true}.Options(screen)
	if err != nil || o.Format != "jpeg" || o.Quality != 55 || o.Region != (api.Rect{X: 100, Y: 50, Width: 1820, Height: 1030}) ||
		o.Scale != 0.25 || !o.Cursor {
		t.Fatalf("options = %+v %v", o, err)
	}
	n := func(v int) *int { return &v }
	for _, bad := range []struct {
		q     api.ScreenshotQuery
		field string
	}{
		{api.ScreenshotQuery{X: 1920, Scale: 1}, "x"}, {api.ScreenshotQuery{Y: -5, Scale: 1}, "y"},
		{api.ScreenshotQuery{Width: n(1921), Scale: 1}, "width"}, {api.ScreenshotQuery{X: 100, Width: n(1900), Scale: 1}, "width"},
		{api.ScreenshotQuery{Width: n(10), Height: n(10), Scale: 0.0001}, "scale"},
	} {
		_, err := bad.q.Options(screen)
		e, ok := err.(*fault.Error)
		if !ok || e.Status() != 400 || e.Field != bad.field || !strings.Contains(e.Message, bad.field) {
			t.Errorf("%+v: %v", bad.q, err)
		}
	}
}

func TestParseWindowID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint32{"123": 123, "0x20000c": 0x20000c, "0X1f": 31} {
		if got, err := api.ParseWindowID("windowId", in); err != nil || got != want {
			t.Errorf("%s = %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "abc", "-1", "0x", "99999999999"} {
		if _, err := api.ParseWindowID("windowId", in); err == nil {
			t.Errorf("%q accepted", in)
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
