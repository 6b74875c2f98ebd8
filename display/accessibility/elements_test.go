package accessibility

import (
	"context"
	"testing"

	"deckhand/display/core"
	"deckhand/display/desktop"
)

// tree is an accessibility bus with one application: a frame holding a
// button and a text field.
type tree struct{ *bus }

func (tree) Apps(context.Context, int, int) ([]desktop.AccessibleApp, error) {
	leaf := func(id, role string) desktop.AccessibleNode {
		return desktop.AccessibleNode{ID: id, Role: role, Name: id, Children: []desktop.AccessibleNode{}}
	}
	frame := leaf("1.2~frame", "frame")
	frame.Children = []desktop.AccessibleNode{leaf("1.2~ok", "push button"), leaf("1.2~field", "text")}
	app := leaf("1.2~app", "application")
	app.Children = []desktop.AccessibleNode{frame}
	return []desktop.AccessibleApp{{Root: app}}, nil
}

// The tree and a search answered flat: document order, each element with
// its depth and its parent's id; a search's matches are top nodes.
func TestElementsAreTheTreeFlat(t *testing.T) {
	t.Parallel()
	desk := core.NewDesk(nil, nil)
	desk.SetDriver(anyDriver{})
	s := New(desk, nil)
	s.SetAccessibility(tree{&bus{}})
	got, err := s.AccessibilityElements(context.Background(), AccessibilityQuery{Scope: "all"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Element{{ID: "1.2~app", Depth: 0}, {ID: "1.2~frame", Depth: 1, Parent: "1.2~app"},
		{ID: "1.2~ok", Depth: 2, Parent: "1.2~frame"}, {ID: "1.2~field", Depth: 2, Parent: "1.2~frame"}}
	if len(got.Elements) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i, w := range want {
		if e := got.Elements[i]; e.ID != w.ID || e.Depth != w.Depth || e.Parent != w.Parent || e.Name != w.ID {
			t.Errorf("element %d: %+v, want %+v", i, e, w)
		}
	}
	found, err := s.SearchAccessibilityElements(context.Background(), AccessibilitySearch{Role: "push button", Scope: "all"})
	if err != nil || len(found.Elements) != 1 || found.Elements[0].ID != "1.2~ok" || found.Elements[0].Depth != 0 {
		t.Fatalf("search: %+v %v", found, err)
	}
}
