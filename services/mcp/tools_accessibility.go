package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The element actions (display_element_click, _focus, _set_value,
// _action, _scroll_into_view) are the display's routes; here are their
// view and the tools that answer the tree flattened for a model, and the
// marked screenshot as image content.

// Element is one node of the accessibility tree, flattened: the tools
// answer the tree in document order with each node's depth and parent,
// since a recursive type has no JSON schema a client can use.
type Element struct {
	ID          string   `json:"id" jsonschema:"the element's id for display_element_click and display_element_set_value"`
	Role        string   `json:"role" jsonschema:"the AT-SPI role name: push button, text, frame, check box ..."`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Value       string   `json:"value,omitempty" jsonschema:"a text element's text or a range's value"`
	States      []string `json:"states,omitempty" jsonschema:"focused, enabled, sensitive, showing, visible, checked, editable ..."`
	Actions     []string `json:"actions,omitempty"`
	Bounds      *Rect    `json:"bounds,omitempty" jsonschema:"screen pixels; absent for an element without a component"`
	Depth       int      `json:"depth" jsonschema:"0 for a top node, its children 1 ..."`
	Parent      string   `json:"parent,omitempty" jsonschema:"the parent element's id"`
}

// Rect is a region of the screen in pixels.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Mark is one numbered box of a marked screenshot.
type Mark struct {
	N         int    `json:"n" jsonschema:"the number drawn on the image, from 1"`
	ElementID string `json:"element_id"`
	Role      string `json:"role"`
	Name      string `json:"name"`
	Bounds    Rect   `json:"bounds" jsonschema:"the element's bounds on the screen, clipped to it"`
}

// node is an element of the display's accessibility tree as its routes
// answer it.
type node struct {
	ID, Role, Name, Description, Value string
	States, Actions                    []string
	Bounds                             *Rect
	Children                           []node
}

// AccessibilityArgs are display_accessibility's arguments.
type AccessibilityArgs struct {
	Scope    string `json:"scope,omitempty" jsonschema:"active (default): the active window's tree; all: every application's"`
	Depth    int    `json:"depth,omitempty" jsonschema:"levels below each window or application to answer, 1-64 (default all)"`
	Role     string `json:"role,omitempty" jsonschema:"keep only nodes of this AT-SPI role and their ancestors"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"trim the text outline to this many characters"`
}

// FindArgs are display_find's arguments.
type FindArgs struct {
	Role  string `json:"role,omitempty" jsonschema:"the AT-SPI role, exactly (push button, text, check box)"`
	Name  string `json:"name,omitempty" jsonschema:"a case-insensitive substring of the element's name"`
	Scope string `json:"scope,omitempty" jsonschema:"all (default): every application; active: the active window"`
}

// ElementsResult answers display_accessibility and display_find.
type ElementsResult struct {
	Elements []Element `json:"elements"`
	Reason   string    `json:"reason,omitempty" jsonschema:"why there are none: the window's application exposes no tree"`
}

// MarkedArgs are display_screenshot_marked's arguments.
type MarkedArgs struct {
	Scope string `json:"scope,omitempty" jsonschema:"active (default): mark the active window's elements; all: every application's"`
}

// MarkedResult answers display_screenshot_marked: the numbered boxes.
type MarkedResult struct {
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Marks  []Mark `json:"marks" jsonschema:"box n on the image is element element_id"`
	Reason string `json:"reason,omitempty" jsonschema:"why there are no marks"`
}

func (s *Service) addAccessibilityTools() {
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_accessibility", Title: "Accessibility tree",
		Description: "The accessibility (AT-SPI) tree of the active window, or of every application with scope=all: each " +
			"element's id, role, name, value, states, actions and screen bounds, in document order with its depth. Act " +
			"on an element by id with display_element_click or display_element_set_value. An application without " +
			"accessibility (an xterm) answers no elements and a reason.", Annotations: read}, s.displayAccessibility)
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_find", Title: "Find elements",
		Description: "Find accessible elements by role (exact: push button, text) and/or name (a case-insensitive " +
			"substring), in every application by default. Answers each match without its children.", Annotations: read},
		s.displayFind)
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_screenshot_marked", Title: "Marked screenshot",
		Description: "A screenshot with a numbered box on each interactive element of the active window (scope=all: of " +
			"every application); the marks list says which element id each number is, for display_element_click.",
		Annotations: read}, s.displayMarked)
	for _, name := range []string{"display_element_click", "display_element_focus", "display_element_set_value",
		"display_element_action", "display_element_scroll_into_view"} {
		views[name] = view{answer: elementActed}
	}
}

// flatten lists nodes in document order.
func flatten(nodes []node, depth int, parent string, out []Element) []Element {
	for _, n := range nodes {
		out = append(out, Element{ID: n.ID, Role: n.Role, Name: n.Name, Description: n.Description, Value: n.Value,
			States: n.States, Actions: n.Actions, Bounds: n.Bounds, Depth: depth, Parent: parent})
		out = flatten(n.Children, depth+1, n.ID, out)
	}
	return out
}

// outline is elements as indented lines, one an element.
func outline(es []Element, reason string) string {
	if len(es) == 0 {
		if reason == "" {
			reason = "nothing matched"
		}
		return "no elements: " + reason
	}
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s[%s] %q id=%s", strings.Repeat("  ", e.Depth), e.Role, e.Name, e.ID)
		if e.Value != "" {
			fmt.Fprintf(&b, " value=%q", e.Value)
		}
		if e.Bounds != nil {
			fmt.Fprintf(&b, " at %d,%d %dx%d", e.Bounds.X, e.Bounds.Y, e.Bounds.Width, e.Bounds.Height)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *Service) displayAccessibility(ctx context.Context, req *mcp.CallToolRequest, in AccessibilityArgs) (*mcp.CallToolResult, ElementsResult, error) {
	q := url.Values{}
	if in.Scope != "" {
		q.Set("scope", in.Scope)
	}
	if in.Depth != 0 {
		q.Set("depth", strconv.Itoa(in.Depth))
	}
	if in.Role != "" {
		q.Set("role", in.Role)
	}
	return s.elements(ctx, req, "/accessibility", q, in.MaxChars)
}

func (s *Service) displayFind(ctx context.Context, req *mcp.CallToolRequest, in FindArgs) (*mcp.CallToolResult, ElementsResult, error) {
	q := url.Values{}
	for k, v := range map[string]string{"role": in.Role, "name": in.Name, "scope": in.Scope} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return s.elements(ctx, req, "/accessibility/search", q, 0)
}

func (s *Service) elements(ctx context.Context, req *mcp.CallToolRequest, path string, q url.Values, maxChars int) (*mcp.CallToolResult, ElementsResult, error) {
	var tree struct {
		Nodes  []node
		Reason string
	}
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "display", path: displayPrefix + path, query: q}, &tree); err != nil {
		return nil, ElementsResult{}, toolErr(err)
	}
	es := flatten(tree.Nodes, 0, "", []Element{})
	return textResult(trimText(outline(es, tree.Reason), 0, s.budget(maxChars)).Text), ElementsResult{Elements: es, Reason: tree.Reason}, nil
}

// elementActed reads an element action's answer (the display's
// ElementResult): how it was done and what the element is now.
func elementActed(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
	r, err := as[struct {
		Element      struct{ Role, Name string }
		Method       string
		Action       string
		TargetClosed bool `json:"target_closed"`
	}](out)
	msg := "done by " + r.Method
	if r.Action != "" {
		msg += " " + r.Action
	}
	if r.TargetClosed {
		return structuredResult(msg+fmt.Sprintf("; [%s] %q then closed with its window or application (the action was taken)",
			r.Element.Role, r.Element.Name), out), err
	}
	return structuredResult(msg+fmt.Sprintf("; the element is now [%s] %q", r.Element.Role, r.Element.Name), out), err
}

func (s *Service) displayMarked(ctx context.Context, req *mcp.CallToolRequest, in MarkedArgs) (*mcp.CallToolResult, MarkedResult, error) {
	q := url.Values{}
	if in.Scope != "" {
		q.Set("scope", in.Scope)
	}
	var m struct {
		Image         []byte
		Width, Height int
		Marks         []Mark
		Reason        string
	}
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "display", path: displayPrefix + "/screenshots/marked", query: q}, &m); err != nil {
		return nil, MarkedResult{}, toolErr(err)
	}
	if m.Marks == nil {
		m.Marks = []Mark{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "screenshot %dx%d with %d marks", m.Width, m.Height, len(m.Marks))
	if m.Reason != "" {
		b.WriteString(" (" + m.Reason + ")")
	}
	b.WriteString("\n")
	for _, k := range m.Marks {
		fmt.Fprintf(&b, "%d: [%s] %q id=%s\n", k.N, k.Role, k.Name, k.ElementID)
	}

	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: m.Image, MIMEType: "image/png"},
			&mcp.TextContent{Text: trimText(b.String(), 0, s.set.OutputBudget).Text}}},
		MarkedResult{Width: m.Width, Height: m.Height, Marks: m.Marks, Reason: m.Reason}, nil
}
