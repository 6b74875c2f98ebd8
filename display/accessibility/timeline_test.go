package accessibility

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/display/input"
)

// bus is an accessibility bus with one text field and one password field
// that keeps what is set on them.
type bus struct{ values map[string]string }

func (b *bus) node(id string) desktop.AccessibleNode {
	role := "text"
	if id == "1.2~pw" {
		role = "password text"
	}
	return desktop.AccessibleNode{ID: id, Role: role, Name: "field " + id, Value: b.values[id], States: []string{},
		Actions: []string{"Activate"}, Children: []desktop.AccessibleNode{}}
}
func (b *bus) Apps(context.Context, int, int) ([]desktop.AccessibleApp, error) { return nil, nil }
func (b *bus) Node(_ context.Context, id string) (desktop.AccessibleNode, error) {
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

// anyDriver is a desk's driver that is never called: element actions
// only need one to be there.
type anyDriver struct{ desktop.Driver }

// event is what the desk's timeline was told.
type event struct {
	Action string
	Args   json.RawMessage
	El     *core.TimelineTarget
}

// Element actions are told to the desk's timeline with their element and
// arguments; a password field's value is not.
func TestElementActionsOnTheTimeline(t *testing.T) {
	t.Parallel()
	desk := core.NewDesk(nil, nil)
	desk.SetDriver(anyDriver{})
	var events []event
	desk.SetTimeline(func(action string, args any, el *core.TimelineTarget, err error) {
		e := event{Action: action, El: el}
		if args != nil {
			e.Args, _ = json.Marshal(args)
		}
		events = append(events, e)
	})
	s := New(desk, input.New(desk))
	s.SetAccessibility(&bus{values: map[string]string{}})
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
	raw, _ := json.Marshal(events)
	if len(events) != 3 || events[0].Action != "element-set-value" || events[0].El.ID != "1.2~5" ||
		string(events[0].Args) != `{"value":"hello"}` || events[1].El.Role != "password text" ||
		strings.Contains(string(raw), "s3cret") || events[2].Action != "element-click" || events[2].Args != nil {
		t.Fatalf("timeline = %s", raw)
	}
}
