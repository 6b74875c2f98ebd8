package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// bus is an accessibility bus with one text field and one password field
// that keeps what is set on them.
type bus struct{ values map[string]string }

func (b *bus) node(id string) AccessibleNode {
	role := "text"
	if id == "1.2~pw" {
		role = "password text"
	}
	return AccessibleNode{ID: id, Role: role, Name: "field " + id, Value: b.values[id], States: []string{},
		Actions: []string{"Activate"}, Children: []AccessibleNode{}}
}
func (b *bus) Apps(context.Context, int, int) ([]AccessibleApp, error) { return nil, nil }
func (b *bus) Node(_ context.Context, id string) (AccessibleNode, error) {
	return b.node(id), nil
}
func (b *bus) DoAction(context.Context, string, string) error { return nil }
func (b *bus) GrabFocus(context.Context, string) error        { return nil }
func (b *bus) ScrollIntoView(context.Context, string) error   { return nil }
func (b *bus) SetValue(_ context.Context, id, v string) error {
	b.values[id] = v
	return nil
}
func (b *bus) Close() error { return nil }

// Element actions taken while recording go on the timeline with their
// element; a password field's value does not.
func TestElementActionsOnTheTimeline(t *testing.T) {
	t.Parallel()
	s, _ := newTestHost(t)
	s.SetAccessibility(&bus{values: map[string]string{}})
	rec := &recording{Recording: Recording{ID: "r", Status: RecordingActive, StartedAt: s.clock.Now()}}
	s.rec.Store(&recorder{recs: map[string]*recording{"r": rec}, active: rec})
	ctx := context.Background()
	set := func(id, v string) ElementValue {
		in := ElementValue{ElementRef: ElementRef{ElementID: id}}
		in.Body.Value = &v
		return in
	}
	if _, err := s.SetElementValue(ctx, set("1.2~5", "hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetElementValue(ctx, set("1.2~pw", "s3cret")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClickElement(ctx, ElementRef{ElementID: "1.2~5"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(rec.events)
	if len(rec.events) != 3 || rec.events[0].Action != "element-set-value" || rec.events[0].Element.ID != "1.2~5" ||
		string(rec.events[0].Args) != `{"value":"hello"}` || rec.events[1].Element.Role != "password text" ||
		strings.Contains(string(raw), "s3cret") || rec.events[2].Action != "element-click" ||
		string(rec.events[2].Args) != "" {
		t.Fatalf("timeline = %s", raw)
	}
	if vtt := WebVTT(rec.events); strings.Count(vtt, " --> ") != 3 || !strings.Contains(vtt, `element-set-value "field 1.2~5" (text) {"value":"hello"}`) {
		t.Errorf("vtt:\n%s", vtt)
	}
}
