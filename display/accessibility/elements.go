package accessibility

import (
	"context"
	"net/http"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform"
)

// Element is a node of the accessibility tree without its children: a
// tree answered flat, in document order, each element with its depth and
// its parent's id, for a reader that takes no recursive type (an MCP
// tool's schema).
type Element struct {
	ID          string        `json:"id" required:"true" doc:"the element's id for display_element_click and display_element_set_value"`
	Role        string        `json:"role" required:"true" doc:"the AT-SPI role name: push button, text, frame, check box ..."`
	Name        string        `json:"name" required:"true"`
	Description string        `json:"description,omitempty"`
	Value       string        `json:"value,omitempty" doc:"a text element's text or a range's value"`
	States      []string      `json:"states,omitempty" doc:"focused, enabled, sensitive, showing, visible, checked, editable ..."`
	Actions     []string      `json:"actions,omitempty"`
	Bounds      *desktop.Rect `json:"bounds,omitempty" doc:"screen pixels; absent for an element without a component"`
	Depth       int           `json:"depth" required:"true" doc:"0 for a top node, its children 1 ..."`
	Parent      string        `json:"parent,omitempty" doc:"the parent element's id"`
}

// Elements is a tree or a search answered flat.
type Elements struct {
	Elements []Element `json:"elements" required:"true"`
	Reason   string    `json:"reason,omitempty" doc:"why there are none: the window's application exposes no tree"`
}

// elementRoutes are the tree and the search answered flat: the
// display_accessibility and display_find tools.
func (s *Service) elementRoutes() []platform.Route {
	read := func(r platform.Route, name, title, desc string) platform.Route {
		r.Tool = &platform.Tool{Name: name, Title: title, Description: desc, Text: elementsText, Budget: true, ReadOnly: true, Idempotent: true}
		return r
	}
	return []platform.Route{
		read(core.Route(http.MethodGet, "/accessibility/elements", "listAccessibilityElements", "Accessibility tree, flat",
			"The tree GET accessibility answers, flat: each element without children, in document order, with its "+
				"depth and its parent's id.", platform.Op(s.AccessibilityElements)),
			"display_accessibility", "Accessibility tree",
			"The accessibility (AT-SPI) tree of the active window, or of every application with scope=all: each "+
				"element's id, role, name, value, states, actions and screen bounds, in document order with its depth. Act "+
				"on an element by id with display_element_click or display_element_set_value. An application without "+
				"accessibility (an xterm) answers no elements and a reason."),
		read(core.Route(http.MethodGet, "/accessibility/elements/search", "searchAccessibilityElements", "Find accessible elements, flat",
			"What GET accessibility/search answers, as elements.", platform.Op(s.SearchAccessibilityElements)),
			"display_find", "Find elements",
			"Find accessible elements by role (exact: push button, text) and/or name (a case-insensitive "+
				"substring), in every application by default. Answers each match without its children."),
	}
}

// elementsText is how a flat tree reads for a model: an indented line an
// element.
const elementsText = "{{range .elements}}{{indent .depth}}[{{.role}}] {{printf \"%q\" .name}} id={{.id}}" +
	"{{with .value}} value={{printf \"%q\" .}}{{end}}{{with .bounds}} at {{.x}},{{.y}} {{.width}}x{{.height}}{{end}}\n" +
	"{{else}}no elements: {{or .reason \"nothing matched\"}}{{end}}"

// AccessibilityElements answers the tree of AccessibilityTree flat.
func (s *Service) AccessibilityElements(ctx context.Context, q AccessibilityQuery) (Elements, error) {
	t, err := s.AccessibilityTree(ctx, q)
	return t.flat(), err
}

// SearchAccessibilityElements answers the matches of SearchAccessibility
// flat.
func (s *Service) SearchAccessibilityElements(ctx context.Context, q AccessibilitySearch) (Elements, error) {
	t, err := s.SearchAccessibility(ctx, q)
	return t.flat(), err
}

func (t AccessibilityTree) flat() Elements {
	out := Elements{Elements: []Element{}, Reason: t.Reason}
	var add func(nodes []desktop.AccessibleNode, depth int, parent string)
	add = func(nodes []desktop.AccessibleNode, depth int, parent string) {
		for _, n := range nodes {
			out.Elements = append(out.Elements, Element{ID: n.ID, Role: n.Role, Name: n.Name, Description: n.Description,
				Value: n.Value, States: n.States, Actions: n.Actions, Bounds: n.Bounds, Depth: depth, Parent: parent})
			add(n.Children, depth+1, n.ID)
		}
	}
	add(t.Nodes, 0, "")
	return out
}
