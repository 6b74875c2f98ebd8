package accessibility_test

import (
	"testing"

	"deckhand/display/accessibility"
	"deckhand/display/desktop"
)

func TestMarksNumberVisibleInteractiveElements(t *testing.T) {
	t.Parallel()
	vis := []string{"showing", "visible"}
	node := func(id, role string, b *desktop.Rect, acts []string, states []string, kids ...desktop.AccessibleNode) desktop.AccessibleNode {
		return desktop.AccessibleNode{ID: id, Role: role, Bounds: b, Actions: acts, States: states, Children: kids}
	}
	tree := []desktop.AccessibleNode{node("f", "frame", &desktop.Rect{Width: 500, Height: 500}, nil, vis,
		node("b", "push button", &desktop.Rect{X: 10, Y: 10, Width: 50, Height: 20}, []string{"Click"}, vis),
		node("hidden", "push button", &desktop.Rect{X: 10, Y: 40, Width: 50, Height: 20}, []string{"Click"}, []string{"visible"}),
		node("label", "label", &desktop.Rect{X: 10, Y: 70, Width: 50, Height: 20}, nil, vis),
		node("edge", "text", &desktop.Rect{X: 1900, Y: 1070, Width: 100, Height: 30}, nil, vis),
		node("off", "text", &desktop.Rect{X: 3000, Y: 10, Width: 10, Height: 10}, nil, vis),
	)}
	marks := accessibility.Marks(tree, desktop.Rect{Width: 1920, Height: 1080})
	if len(marks) != 2 || marks[0].N != 1 || marks[0].ElementID != "b" || marks[1].N != 2 || marks[1].ElementID != "edge" ||
		marks[1].Bounds != (desktop.Rect{X: 1900, Y: 1070, Width: 20, Height: 10}) {
		t.Fatalf("marks = %+v", marks)
	}
}
