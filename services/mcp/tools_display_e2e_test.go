package mcp_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
)

// displayRouteTools are the display tools, each one route.
var displayRouteTools = []string{"display_screenshot", "display_screenshot_marked", "display_windows", "display_click",
	"display_double_click", "display_move", "display_scroll", "display_drag", "display_type", "display_key",
	"display_accessibility", "display_find", "display_element_click", "display_element_focus", "display_element_set_value",
	"display_element_action", "display_element_scroll_into_view", "display_recording_start", "display_recording_stop",
	"display_recordings", "display_recording_timeline"}

// TestDisplayRouteTools: on a real Xvfb, the display's tools that are one
// route each are declared by its OpenAPI document and listed with the
// route's description, hints and schemas (display_accessibility's with
// its budget, max_chars); they run with the route's
// rules (bad arguments refused naming the field) and answer its result
// with a line for the model.
func TestDisplayRouteTools(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (make build; DECKHAND_BIN=$PWD/bin)")
	}
	display := platformtest.StartXvfb(t, "1024x768x24")
	a := startAgentEnv(t, []string{"DISPLAY=" + display}, "display,mcp", "--display", display)
	waitService(t, a, 4) // the display child: tools/list has its route tools once it answers
	s := connect(t, a.endpoint(), allKey, nil)
	listed := listedTools(t, s)
	declared := routeTools(t, a, "display")
	names := make([]string, 0, len(declared))
	for name, want := range declared {
		names = append(names, name)
		got, ok := listed[name]
		if !ok {
			t.Errorf("%s: the route's tool is not in tools/list", name)
			continue
		}
		if name == "display_accessibility" {
			// The route declares its budget: max_chars is its argument.
			if props := got["inputSchema"].(map[string]any)["properties"].(map[string]any); props["max_chars"] == nil {
				t.Errorf("%s: no max_chars argument", name)
			}
		}
		for _, k := range []string{"description", "title", "annotations", "inputSchema", "outputSchema"} {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%s: %s %v, the route's %v", name, k, got[k], want[k])
			}
		}
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(displayRouteTools)); !slices.Equal(names, want) {
		t.Fatalf("the display's route tools %v, want %v", names, want)
	}

	for _, c := range []struct {
		tool string
		args map[string]any
		text string
	}{
		{"display_move", map[string]any{"x": 10, "y": 20}, "done; the pointer is at 10,20"},
		{"display_drag", map[string]any{"from": map[string]any{"x": 5, "y": 5}, "to": map[string]any{"x": 30, "y": 40}, "duration_ms": 0},
			"done; the pointer is at 30,40"},
		{"display_key", map[string]any{"key": "shift"}, "pressed shift"},
		{"display_type", map[string]any{"text": ""}, "typed 0 characters"},
		{"display_screenshot", map[string]any{"max_width": 800}, "screenshot 800x600 of a 1024x768 screen"},
	} {
		res := callTool(t, s, c.tool, c.args)
		if res.IsError || text(res) != c.text {
			t.Errorf("%s: %v %q, want %q", c.tool, res.IsError, text(res), c.text)
		}
	}
	// The screenshot's PNG is image content, not a member of the
	// structured content; unscaled when the screen is narrower.
	res := callTool(t, s, "display_screenshot", map[string]any{"max_width": 2000})
	shot := structured[map[string]any](t, res)
	if w := decodePNG(t, res); w != 1024 || shot["image"] != nil || shot["width"] != 1024.0 || shot["scale"] != 1.0 {
		t.Errorf("display_screenshot of a narrower screen: %d pixels wide, %v", w, shot)
	}
	if p := structured[struct{ X, Y int }](t, callTool(t, s, "display_click", map[string]any{})); p.X != 30 || p.Y != 40 {
		t.Errorf("display_click without x,y clicked at %d,%d, not where the drag left the pointer (30,40)", p.X, p.Y)
	}
	for _, c := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"display_click", map[string]any{"x": 5000, "y": 1}, "OFF_SCREEN"},
		{"display_key", map[string]any{"key": "nosuchkey"}, "key"},
		{"display_type", map[string]any{"text": "a", "no_such": 1}, "no_such"},
		{"display_element_click", map[string]any{"element_id": "not an id"}, "elementId"},
		{"display_recording_stop", map[string]any{"id": "nope"}, "id"},
		{"display_screenshot", map[string]any{"max_width": 0}, "max_width"},
	} {
		res := callTool(t, s, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.field) {
			t.Errorf("%s %v: %v %q, want an error naming %s", c.tool, c.args, res.IsError, text(res), c.field)
		}
	}
}
