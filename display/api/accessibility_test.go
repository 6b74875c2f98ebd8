package api_test

import (
	"testing"

	"deckhand/display/api"
)

func TestElementIDRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ bus, path, id string }{
		{":1.42", "/org/a11y/atspi/accessible/12", "1.42~12"},
		{":1.5", "/org/a11y/atspi/accessible/root", "1.5~root"},
		{":1.7", "/org/chromium/a11y/3", "1.7~_L29yZy9jaHJvbWl1bS9hMTF5LzM"},
		{":1.7", "/org/a11y/atspi/accessible/a/b", "1.7~_L29yZy9hMTF5L2F0c3BpL2FjY2Vzc2libGUvYS9i"},
	} {
		if got := api.ElementID(c.bus, c.path); got != c.id {
			t.Errorf("ElementID(%s, %s) = %s, want %s", c.bus, c.path, got, c.id)
		}
		bus, path, err := api.ParseElementID(c.id)
		if err != nil || bus != c.bus || path != c.path {
			t.Errorf("ParseElementID(%s) = %s %s %v", c.id, bus, path, err)
		}
	}
	for _, bad := range []string{"", "~", "1.2", "a.b~3", "1.2~", "1.2~x/y", "1.2~_!!", "1.2~_YWJj"} {
		if _, _, err := api.ParseElementID(bad); err == nil {
			t.Errorf("ParseElementID(%q) accepted", bad)
		}
	}
}

func TestMarksNumberVisibleInteractiveElements(t *testing.T) {
	t.Parallel()
	vis := []string{"showing", "visible"}
	node := func(id, role string, b *api.Rect, acts []string, states []string, kids ...api.AccessibleNode) api.AccessibleNode {
		return api.AccessibleNode{ID: id, Role: role, Bounds: b, Actions: acts, States: states, Children: kids}
	}
	tree := []api.AccessibleNode{node("f", "frame", &api.Rect{Width: 500, Height: 500}, nil, vis,
		node("b", "push button", &api.Rect{X: 10, Y: 10, Width: 50, Height: 20}, []string{"Click"}, vis),
		node("hidden", "push button", &api.Rect{X: 10, Y: 40, Width: 50, Height: 20}, []string{"Click"}, []string{"visible"}),
		node("label", "label", &api.Rect{X: 10, Y: 70, Width: 50, Height: 20}, nil, vis),
		node("edge", "text", &api.Rect{X: 1900, Y: 1070, Width: 100, Height: 30}, nil, vis),
		node("off", "text", &api.Rect{X: 3000, Y: 10, Width: 10, Height: 10}, nil, vis),
	)}
	marks := api.Marks(tree, api.Rect{Width: 1920, Height: 1080})
	if len(marks) != 2 || marks[0].N != 1 || marks[0].ElementID != "b" || marks[1].N != 2 || marks[1].ElementID != "edge" ||
		marks[1].Bounds != (api.Rect{X: 1900, Y: 1070, Width: 20, Height: 10}) {
		t.Fatalf("marks = %+v", marks)
	}
}
