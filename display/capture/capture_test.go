package capture_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"deckhand/display/capture"
	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

// TestScreenshotQuery: the binder checks the query's grammar and ranges
// before the display is needed (400 naming the parameter even where the
// handler could only answer 503), then Options checks the region against
// the screen.
func TestScreenshotQuery(t *testing.T) {
	t.Parallel()
	svc := capture.New(core.NewDesk(nil, nil))
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
	screen := desktop.Rect{Width: 1920, Height: 1080}
	def := capture.ScreenshotQuery{Format: "png", Quality: 80, Scale: 1}
	o, err := def.Options(screen)
	if err != nil || o.Format != "png" || o.Quality != 80 || o.Region != screen || o.Scale != 1 || o.Cursor {
		t.Fatalf("defaults = %+v %v", o, err)
	}
	o, err = capture.ScreenshotQuery{Format: "jpg", Quality: 55, X: 100, Y: 50, Scale: 0.25, Cursor: true}.Options(screen)
	if err != nil || o.Format != "jpeg" || o.Quality != 55 || o.Region != (desktop.Rect{X: 100, Y: 50, Width: 1820, Height: 1030}) ||
		o.Scale != 0.25 || !o.Cursor {
		t.Fatalf("options = %+v %v", o, err)
	}
	n := func(v int) *int { return &v }
	for _, bad := range []struct {
		q     capture.ScreenshotQuery
		field string
	}{
		{capture.ScreenshotQuery{X: 1920, Scale: 1}, "x"}, {capture.ScreenshotQuery{Y: -5, Scale: 1}, "y"},
		{capture.ScreenshotQuery{Width: n(1921), Scale: 1}, "width"}, {capture.ScreenshotQuery{X: 100, Width: n(1900), Scale: 1}, "width"},
		{capture.ScreenshotQuery{Width: n(10), Height: n(10), Scale: 0.0001}, "scale"},
	} {
		_, err := bad.q.Options(screen)
		e, ok := err.(*fault.Error)
		if !ok || e.Status() != 400 || e.Field != bad.field || !strings.Contains(e.Message, bad.field) {
			t.Errorf("%+v: %v", bad.q, err)
		}
	}
}
