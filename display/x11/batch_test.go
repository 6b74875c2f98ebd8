//go:build linux && cgo

package x11_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/display/input"
)

func TestBatchRejectsBeforeRunning(t *testing.T) {
	needX(t)
	xtool(t, "xdotool", "mousemove", "11", "22")
	for _, c := range []struct {
		steps []map[string]any
		field string
	}{
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "key", "key": "notakey"}}, "steps[1].key"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "move", "x": 5000, "y": 1}}, "steps[1].x"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "fly"}}, "steps[1].action"},
		{[]map[string]any{{"action": "click", "x": 500, "y": 500}, {"action": "wait", "until": "window", "name": "("}}, "steps[1].name"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "type"}}, "steps[1].text"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "type", "text": "rm -rf x\x03"}}, "steps[1].text"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "drag", "from": map[string]int{"x": 1, "y": 1}}}, "steps[1].to"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "scroll", "direction": "sideways"}}, "steps[1].direction"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "resize-window", "width": 0, "height": 5}}, "steps[1].width"},
		{[]map[string]any{{"action": "move", "x": 500, "y": 500}, {"action": "type", "text": "a", "x": 5}}, "steps[1].x"},
	} {
		a := call(t, "POST", "/api/v1/display/input/batch", map[string]any{"steps": c.steps})
		e := a.errCode(t)
		if a.status != 400 || !strings.HasPrefix(e.Message, c.field+":") {
			t.Errorf("%v: %d %s", c.steps, a.status, a.body)
		}
	}
	if got := mouseAt(t); got != "x:11 y:22" {
		t.Fatalf("a rejected batch ran a step: pointer at %q", got)
	}
	for _, body := range []string{`{}`, `{"steps":[]}`, `{"steps":[{"action":"move","x":1,"y":1,"bogus":1}]}`} {
		if a := call(t, "POST", "/api/v1/display/input/batch", body); a.status != 400 {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}
}

func TestBatchRunsInOrderAndStopsAtFirstFailure(t *testing.T) {
	needX(t)
	dir := t.TempDir()
	w, _ := startXterm(t, "batch-target", "-e", "bash", "--norc", "--noprofile")
	file := filepath.Join(dir, "out")
	a := call(t, "POST", "/api/v1/display/input/batch", map[string]any{"steps": []map[string]any{
		{"action": "focus_window", "id": w.ID},
		{"action": "click-at", "x": w.X + 40, "y": w.Y + 40},
		{"action": "type", "text": "echo batch"},
		{"action": "key", "key": "space"},
		{"action": "type", "text": "ran > " + file},
		{"action": "key", "key": "Return"},
		{"action": "move", "x": 77, "y": 88},
		{"action": "wait", "until": "window", "name": "^no-such-window$", "timeout_ms": 100},
		{"action": "move", "x": 99, "y": 99},
	}})
	mustOK(t, a, "batch")
	var r input.BatchResult
	a.decode(t, &r)
	if r.OK || r.Total != 9 || r.Completed != 7 || r.FailedIndex == nil || *r.FailedIndex != 7 || len(r.Results) != 8 {
		t.Fatalf("batch result %s", a.body)
	}
	if r.Results[7].Error == nil || r.Results[7].Error.Code != "WAIT_TIMEOUT" || r.Results[1].Action != "click-at" {
		t.Fatalf("step results %s", a.body)
	}
	if got := mouseAt(t); got != "x:77 y:88" {
		t.Fatalf("the step after the failure ran: pointer at %q", got)
	}
	eventually(t, "typed command ran", func() bool {
		b, _ := os.ReadFile(file)
		return string(b) == "batch ran\n"
	})

	a = call(t, "POST", "/api/v1/display/input/act", map[string]any{"action": "move", "x": 5, "y": 6})
	mustOK(t, a, "act")
	var sr input.StepResult
	a.decode(t, &sr)
	if !sr.OK || sr.Action != "move" || mouseAt(t) != "x:5 y:6" {
		t.Fatalf("act = %s", a.body)
	}
}

func TestSelectAnswersTheSelection(t *testing.T) {
	needX(t)
	w, _ := startXterm(t, "select-source", "-geometry", "60x5+200+700", "-e", "bash", "-c", "printf 'select-me-please\\n'; sleep 60")
	g := geometryOf(t, w.ID)
	eventually(t, "text drawn", func() bool {
		a := call(t, "GET", fmt.Sprintf("/api/v1/display/screenshots?x=%d&y=%d&width=100&height=14", g.X, g.Y), nil)
		img, err := png.Decode(bytes.NewReader(a.body))
		if err != nil {
			return false
		}
		dark := 0
		for y := 0; y < 14; y++ {
			for x := 0; x < 100; x++ {
				if r, _, _ := rgb(img, x, y); r < 100 {
					dark++
				}
			}
		}
		return dark > 50
	})
	// drag across the first line of text (xterm's font is about 6x13)
	a := call(t, "POST", "/api/v1/display/input/select", map[string]any{
		"from": map[string]int{"x": g.X + 2, "y": g.Y + 6}, "to": map[string]int{"x": g.X + 6*16 - 2, "y": g.Y + 6}})
	mustOK(t, a, "select")
	var r input.DragResult
	a.decode(t, &r)
	if r.Text == nil || !strings.HasPrefix(*r.Text, "select-me") {
		t.Fatalf("select = %s", a.body)
	}
	if got := string(xpipe(t, nil, "xclip", "-o", "-selection", "primary")); got != *r.Text {
		t.Fatalf("xclip primary = %q, select answered %q", got, *r.Text)
	}
}
