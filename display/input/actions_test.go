package input

import (
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
)

// examples holds a valid body for every action; an action added to the
// table without one fails TestEveryActionIsRoutedDocumentedAndBatchable.
var examples = map[string]string{
	"move":            `{"x":10,"y":20}`,
	"move-relative":   `{"dx":5}`,
	"click":           `{}`,
	"double-click":    `{"x":5,"y":5,"button":"right"}`,
	"down":            `{"button":"middle"}`,
	"up":              `{"x":1,"y":1}`,
	"scroll":          `{"direction":"up","amount":3}`,
	"type":            `{"text":"hello","delay_ms":1}`,
	"key":             `{"key":"ctrl+shift+t","modifiers":["alt"],"repeat":2}`,
	"key-down":        `{"key":"shift"}`,
	"key-up":          `{"key":"shift"}`,
	"click-at":        `{"x":100,"y":100,"clicks":3}`,
	"type-at":         `{"x":100,"y":100,"text":"a","clear":true}`,
	"drag":            `{"from":{"x":1,"y":1},"to":{"x":50,"y":60},"duration_ms":0}`,
	"select":          `{"from":{"x":1,"y":1},"to":{"x":50,"y":60}}`,
	"wait":            `{"until":"region-change","region":{"x":0,"y":0,"width":10,"height":10},"timeout_ms":5}`,
	"sleep":           `{"duration_ms":1}`,
	"focus-window":    `{"id":4194305}`,
	"raise-window":    `{}`,
	"minimize-window": `{}`,
	"close-window":    `{"id":7}`,
	"move-window":     `{"x":-10,"y":20}`,
	"resize-window":   `{"width":300,"height":200}`,
	"clipboard":       `{"text":"copied"}`,
	"reset":           `{}`,
}

// screenOnly is the X server as far as validation sees it: the screen's
// size. Anything that would run an action panics (a 500), so a test that
// gets a 400 knows nothing ran.
type screenOnly struct{ desktop.Driver }

func (screenOnly) Info() (desktop.Info, error) { return desktop.Info{Width: 1920, Height: 1080}, nil }
func (screenOnly) Display() string             { return ":test" }

func newTestHost(t *testing.T) (*Service, *platform.Host) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	desk := core.NewDesk(quiet, nil)
	desk.SetDriver(screenOnly{})
	svc := New(desk)
	return svc, platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"}, Logger: quiet},
		append(svc.Routes(), svc.Actions()...))
}

// withAction is body with "action" set to name.
func withAction(t *testing.T, name, body string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	m["action"] = name
	return m
}

func post(t *testing.T, h *platform.Host, path string, body any) (int, fault.ContainerError) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req := platformtest.NewRequest("POST", path, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.App().Test(req)
	if err != nil {
		t.Fatal(err)
	}
	var e fault.ContainerError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e
}

// jsonFields lists a body type's JSON field names.
func jsonFields(body any) []string {
	var out []string
	for _, f := range reflect.VisibleFields(reflect.TypeOf(body).Elem()) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && !f.Anonymous && name != "" {
			out = append(out, name)
		}
	}
	return out
}

func TestEveryActionIsRoutedDocumentedAndBatchable(t *testing.T) {
	t.Parallel()
	_, h := newTestHost(t)
	raw, err := h.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Ref        string                     `json:"$ref"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	type op struct {
		Summary     string `json:"summary"`
		RequestBody *struct {
			Content map[string]struct {
				Schema schema `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	}
	var doc struct {
		Paths      map[string]map[string]op `json:"paths"`
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// A named body type is a reference to its component.
	for _, item := range doc.Paths {
		for m, o := range item {
			if o.RequestBody == nil {
				continue
			}
			for ct, c := range o.RequestBody.Content {
				if name, ok := strings.CutPrefix(c.Schema.Ref, "#/components/schemas/"); ok {
					c.Schema = doc.Components.Schemas[name]
					o.RequestBody.Content[ct] = c
				}
			}
			item[m] = o
		}
	}
	stepProps := doc.Paths[core.Prefix+"/input/act"]["post"].RequestBody.Content["application/json"].Schema.Properties
	batchItem := doc.Paths[core.Prefix+"/input/batch"]["post"].RequestBody.Content["application/json"].Schema.Properties["steps"]
	if _, ok := stepProps["action"]; !ok || !strings.Contains(string(batchItem), `"action"`) {
		t.Fatalf("act and batch step schemas lack action: %v / %s", stepProps, batchItem)
	}

	var steps []map[string]any
	for _, a := range actions {
		ex, ok := examples[a.name]
		if !ok {
			t.Errorf("action %s has no example body in this test", a.name)
			continue
		}
		// the route and its OpenAPI entry
		o, ok := doc.Paths[core.Prefix+a.path]["post"]
		if !ok || o.Summary != a.summary {
			t.Errorf("%s: no POST %s in the OpenAPI document (or another summary)", a.name, a.path)
		}
		fields := jsonFields(a.body())
		if len(fields) > 0 {
			if o.RequestBody == nil {
				t.Errorf("%s: POST %s documents no body", a.name, a.path)
			} else {
				props := o.RequestBody.Content["application/json"].Schema.Properties
				for _, f := range fields {
					if _, ok := props[f]; !ok {
						t.Errorf("%s: body field %s is not documented on its route", a.name, f)
					}
				}
			}
		}
		for _, f := range fields {
			if _, ok := stepProps[f]; !ok {
				t.Errorf("%s: field %s is missing from the step schema", a.name, f)
			}
		}
		// its endpoint body and the same step, by name, alias and with underscores
		if p, err := a.decodeBody([]byte(ex)); err != nil || p.onScreen(desktop.Rect{Width: 1920, Height: 1080}) != nil {
			t.Errorf("%s: endpoint rejects its example %s: %v", a.name, ex, err)
		}
		for _, name := range append([]string{a.name, strings.ReplaceAll(strings.ToUpper(a.name), "-", "_")}, a.aliases...) {
			steps = append(steps, withAction(t, name, ex))
		}
	}
	if len(steps) == 0 {
		t.Fatal("no actions")
	}
	// a batch of every action (each by every name), then one unknown: the
	// 400 naming the last step shows every step before it was accepted, and
	// that nothing ran (running would reach screenOnly's missing methods)
	steps = append(steps, map[string]any{"action": "fly"})
	status, e := post(t, h, core.Prefix+"/input/batch", map[string]any{"steps": steps})
	last := "steps[" + strconv.Itoa(len(steps)-1) + "].action"
	if status != 400 || e.Code != fault.CodeInvalid || !strings.HasPrefix(e.Message, last+": unknown action \"fly\"") ||
		!strings.Contains(e.Details, "move-relative") {
		t.Fatalf("batch of every action: %d %+v, want 400 naming %s", status, e, last)
	}
}

// A bad step is named by its index and field, whatever is wrong with it.
func TestBatchNamesTheStepAndField(t *testing.T) {
	t.Parallel()
	_, h := newTestHost(t)
	ok := map[string]any{"action": "move", "x": 1, "y": 1}
	pt := map[string]int{"x": 1, "y": 1}
	for _, c := range []struct {
		name  string
		step  any
		field string
		code  string
	}{
		{"unknown action", map[string]any{"action": "teleport"}, "steps[1].action", fault.CodeInvalid},
		{"no action", map[string]any{"x": 1}, "steps[1].action", fault.CodeInvalid},
		{"empty action", map[string]any{"action": " "}, "steps[1].action", fault.CodeInvalid},
		{"action not a string", map[string]any{"action": 5}, "steps[1].action", fault.CodeInvalid},
		{"not an object", 5, "steps[1]", fault.CodeInvalid},
		{"null step", nil, "steps[1]", fault.CodeInvalid},
		{"field of another action", map[string]any{"action": "move", "x": 1, "y": 1, "text": "a"}, "steps[1].text", fault.CodeInvalid},
		{"wrong type", map[string]any{"action": "click", "x": "left"}, "steps[1].x", fault.CodeInvalid},
		{"nested wrong type", map[string]any{"action": "drag", "from": map[string]any{"x": "a"}, "to": pt}, "steps[1].from.x", fault.CodeInvalid},
		{"rule", map[string]any{"action": "scroll", "amount": 101}, "steps[1].amount", fault.CodeInvalid},
		{"modifier", map[string]any{"action": "key", "key": "a", "modifiers": []string{"ctrl", "shfit"}}, "steps[1].modifiers[1]", fault.CodeInvalid},
		{"off screen", map[string]any{"action": "drag", "from": pt, "to": map[string]int{"x": 1, "y": 5000}}, "steps[1].to.y", core.CodeOffScreen},
		{"region", map[string]any{"action": "wait", "until": "region-change", "region": map[string]int{"x": 0, "y": 0, "width": 0, "height": 1}}, "steps[1].region.width", fault.CodeInvalid},
		{"select button", map[string]any{"action": "select", "from": pt, "to": pt, "button": "right"}, "steps[1].button", fault.CodeInvalid},
	} {
		status, e := post(t, h, core.Prefix+"/input/batch", map[string]any{"steps": []any{ok, c.step}})
		if status != 400 || e.Code != c.code || !strings.HasPrefix(e.Message, c.field+":") {
			t.Errorf("%s: %d %+v, want %s naming %s", c.name, status, e, c.code, c.field)
		}
	}
	// input/act and the endpoints name the field alone
	if status, e := post(t, h, core.Prefix+"/input/act", map[string]any{"action": "fly"}); status != 400 || !strings.HasPrefix(e.Message, "action: unknown action") {
		t.Errorf("act: %d %+v", status, e)
	}
	if status, e := post(t, h, core.Prefix+"/mouse/move", map[string]any{"x": 1, "y": 1, "text": "a"}); status != 400 || !strings.HasPrefix(e.Message, "text: unknown field") {
		t.Errorf("mouse/move: %d %+v", status, e)
	}
}
