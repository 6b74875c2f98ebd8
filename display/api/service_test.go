package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"deckhand/display/api"
	"deckhand/platform"
	"deckhand/platform/platformtest"
)

func TestUnavailableAnswers503Everywhere(t *testing.T) {
	t.Parallel()
	svc := api.NewUnavailable("no X display is configured")
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"}, HealthStatus: svc.HealthStatus,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, svc.Routes())
	n := 0
	for _, r := range svc.Routes() {
		path := strings.ReplaceAll(r.Path, "{windowId}", "123")
		var body io.Reader
		if r.Method == "POST" {
			body = strings.NewReader(`{}`)
		}
		req := platformtest.NewRequest(r.Method, path, body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := host.App().Test(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if r.Path == "/api/v1/display/" {
			var idx api.Index
			_ = json.Unmarshal(b, &idx)
			if resp.StatusCode != 200 || idx.Available || idx.Reason == "" || len(idx.Endpoints) != len(svc.Routes()) {
				t.Errorf("index: %d %s", resp.StatusCode, b)
			}
			continue
		}
		var e platform.ContainerError
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != 503 || e.Code != "DISPLAY_UNAVAILABLE" || !strings.Contains(e.Message, "no X display is configured") {
			t.Errorf("%s %s: %d %s", r.Method, path, resp.StatusCode, b)
		}
		n++
	}
	if n < 37 {
		t.Fatalf("only %d display routes", n)
	}
	resp, _ := host.App().Test(platformtest.NewRequest("GET", "/health", nil))
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
		e, isErr := err.(*platform.Error)
		if !isErr || e.Code != platform.CodeInvalid || !strings.Contains(e.Details, c.match) || !strings.HasPrefix(e.Message, "key: unknown key name") {
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

// TestParseScreenshot parses a query the way the host does (the declared
// ScreenshotQuery), then checks it against the screen: grammar and range
// errors come from the declaration, screen errors from ParseScreenshot, and
// both name the parameter.
func TestParseScreenshot(t *testing.T) {
	t.Parallel()
	screen := api.Rect{Width: 1920, Height: 1080}
	parse := func(query string) (api.ScreenshotOptions, error) {
		vals, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		q, err := platform.ParseQuery(api.ScreenshotQuery, func(k string) []string { return vals[k] })
		if err != nil {
			return api.ScreenshotOptions{}, err
		}
		return api.ParseScreenshot(q, screen)
	}
	o, err := parse("")
	if err != nil || o.Format != "png" || o.Quality != 80 || o.Region != screen || o.Scale != 1 || o.Cursor {
		t.Fatalf("defaults = %+v %v", o, err)
	}
	o, err = parse("format=jpg&quality=55&x=100&y=50&scale=0.25&cursor=true")
	if err != nil || o.Format != "jpeg" || o.Quality != 55 || o.Region != (api.Rect{X: 100, Y: 50, Width: 1820, Height: 1030}) ||
		o.Scale != 0.25 || !o.Cursor {
		t.Fatalf("options = %+v %v", o, err)
	}
	if o, err = parse("cursor=1&width=10&height=20"); err != nil || !o.Cursor || o.Region != (api.Rect{Width: 10, Height: 20}) {
		t.Fatalf("cursor=1 = %+v %v", o, err)
	}
	for _, bad := range []struct{ query, field string }{
		{"format=bmp", "format"}, {"format=PNG", "format"}, {"quality=0", "quality"}, {"quality=x", "quality"},
		{"scale=0", "scale"}, {"scale=1.01", "scale"}, {"x=1920", "x"}, {"y=-5", "y"}, {"width=1921", "width"},
		{"x=100&width=1900", "width"}, {"height=0", "height"}, {"cursor=2", "cursor"}, {"cursor=yes", "cursor"},
		{"cursor=", "cursor"}, {"x=1&x=2", "x"}, {"x=99999999999", "x"}, {"scale=0.0001&width=10&height=10", "scale"},
	} {
		_, err := parse(bad.query)
		e, ok := err.(*platform.Error)
		if !ok || e.Status() != 400 || e.Field != bad.field || !strings.Contains(e.Message, bad.field) {
			t.Errorf("%s: %v", bad.query, err)
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
		var e platform.ContainerError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.details != "" && (e.Details != tc.details || !strings.Contains(e.Message, tc.details))) {
			t.Errorf("%s: %d %+v, want %d naming %q", tc.query, resp.StatusCode, e, tc.status, tc.details)
		}
	}
}
