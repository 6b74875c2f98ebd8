package accessibility

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// AccessibilityTree answers GET .../accessibility.
type AccessibilityTree struct {
	Nodes  []desktop.AccessibleNode `json:"nodes" required:"true"`
	Reason string                   `json:"reason,omitempty" doc:"why nodes is empty: the window's application exposes no tree"`
}

// AccessibilityQuery selects a tree.
type AccessibilityQuery struct {
	Scope string `query:"scope" enum:"active,all" default:"active" doc:"active: the active window's tree; all: every application's"`
	Depth int    `query:"depth" minimum:"0" maximum:"64" doc:"levels below each window (scope=active) or application (scope=all) to answer; 0 or absent: all"`
	Role  string `query:"role" maxLength:"64" doc:"keep only nodes of this AT-SPI role and their ancestors"`
}

// AccessibilityTree answers the tree of the active window, or of every
// application.
func (s *Service) AccessibilityTree(ctx context.Context, q AccessibilityQuery) (AccessibilityTree, error) {
	nodes, reason, err := s.tree(ctx, q.Scope, q.Depth)
	if err != nil {
		return AccessibilityTree{}, err
	}
	if q.Role != "" {
		nodes = pruneToRole(nodes, q.Role)
	}
	return AccessibilityTree{Nodes: nodes, Reason: reason}, nil
}

// tree is the scope's nodes, or why there are none.
func (s *Service) tree(ctx context.Context, scope string, depth int) ([]desktop.AccessibleNode, string, error) {
	d, err := s.desk.Current()
	if err != nil {
		return nil, "", err
	}
	a, err := s.accessibility()
	if err != nil {
		return nil, "", err
	}
	levels := -1
	if depth > 0 {
		levels = depth
	}
	if scope == "all" {
		apps, err := a.Apps(ctx, 0, levels)
		if err != nil {
			return nil, "", err
		}
		nodes := []desktop.AccessibleNode{}
		for _, app := range apps {
			nodes = append(nodes, app.Root)
		}
		if len(nodes) == 0 {
			return nodes, "no application is registered on the accessibility bus", nil
		}
		return nodes, "", nil
	}
	w, err := d.ActiveWindow()
	if err != nil {
		var pe *fault.Error
		if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
			return []desktop.AccessibleNode{}, "no window is active", nil
		}
		return nil, "", err
	}
	if w.PID == 0 {
		return []desktop.AccessibleNode{}, fmt.Sprintf("the active window %q does not say its process (_NET_WM_PID), so its "+
			"application cannot be found on the accessibility bus", w.Name), nil
	}
	if levels > 0 {
		levels++ // the application node sits above the window
	}
	apps, err := a.Apps(ctx, w.PID, levels)
	if err != nil {
		return nil, "", err
	}
	if frame, ok := activeFrame(apps, w); ok {
		return []desktop.AccessibleNode{frame}, "", nil
	}
	return []desktop.AccessibleNode{}, fmt.Sprintf("the active window %q (pid %d) exposes no accessibility tree", w.Name, w.PID), nil
}

// activeFrame picks the window of the application's tree that is the X
// window: the one AT-SPI calls active, else the one with its title, else
// the one at its place.
func activeFrame(apps []desktop.AccessibleApp, w desktop.Window) (desktop.AccessibleNode, bool) {
	var frames []desktop.AccessibleNode
	for _, app := range apps {
		frames = append(frames, app.Root.Children...)
	}
	for _, f := range frames {
		if f.Has("active") {
			return f, true
		}
	}
	for _, f := range frames {
		if f.Name == w.Name {
			return f, true
		}
	}
	for _, f := range frames {
		if f.Bounds != nil && (desktop.Rect{X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}).Contains(desktop.Point{X: f.Bounds.X + f.Bounds.Width/2, Y: f.Bounds.Y + f.Bounds.Height/2}) {
			return f, true
		}
	}
	return desktop.AccessibleNode{}, false
}

// pruneToRole keeps the nodes of role and their ancestors.
func pruneToRole(nodes []desktop.AccessibleNode, role string) []desktop.AccessibleNode {
	out := []desktop.AccessibleNode{}
	for _, n := range nodes {
		kids := pruneToRole(n.Children, role)
		if n.Role == role || len(kids) > 0 {
			n.Children = kids
			out = append(out, n)
		}
	}
	return out
}

// AccessibilitySearch finds elements.
type AccessibilitySearch struct {
	Role  string `query:"role" maxLength:"64" doc:"the AT-SPI role, exactly (push button)"`
	Name  string `query:"name" maxLength:"1024" doc:"a case-insensitive substring of the element's name"`
	Scope string `query:"scope" enum:"active,all" default:"all" doc:"where to search: every application (default) or the active window"`
}

// Validate needs a criterion.
func (q *AccessibilitySearch) Validate() error {
	if q.Role == "" && q.Name == "" {
		return fault.Invalid("role", "role or name is required")
	}
	return nil
}

// SearchAccessibility answers the elements matching role and name, each
// without its children.
func (s *Service) SearchAccessibility(ctx context.Context, q AccessibilitySearch) (AccessibilityTree, error) {
	nodes, reason, err := s.tree(ctx, q.Scope, 0)
	if err != nil {
		return AccessibilityTree{}, err
	}
	name := strings.ToLower(q.Name)
	out := []desktop.AccessibleNode{}
	walk(nodes, func(n desktop.AccessibleNode) {
		if (q.Role == "" || n.Role == q.Role) && (name == "" || strings.Contains(strings.ToLower(n.Name), name)) {
			n.Children = []desktop.AccessibleNode{}
			out = append(out, n)
		}
	})
	return AccessibilityTree{Nodes: out, Reason: reason}, nil
}

func walk(nodes []desktop.AccessibleNode, fn func(desktop.AccessibleNode)) {
	for _, n := range nodes {
		fn(n)
		walk(n.Children, fn)
	}
}

// ElementRef names an element in the path.
type ElementRef struct {
	ElementID string `path:"elementId" maxLength:"512" doc:"an id from the tree or a search"`
}

// ValidateParams checks the id's syntax.
func (r ElementRef) ValidateParams() error {
	_, _, err := desktop.ParseElementID(r.ElementID)
	return err
}

// ElementAction invokes a named action.
type ElementAction struct {
	ElementRef
	Body struct {
		Name string `json:"name" required:"true" maxLength:"256" doc:"one of the element's actions"`
	}
}

// ElementValue sets a value.
type ElementValue struct {
	ElementRef
	Body struct {
		Value *string `json:"value" required:"true" maxLength:"1000000" doc:"the text, or a number for a range (slider, spin button)"`
	}
}

// ElementResult answers an element action: the element afterwards.
type ElementResult struct {
	Element desktop.AccessibleNode `json:"element" required:"true" doc:"the element afterwards; as it was before when target_closed"`
	Method  string                 `json:"method" required:"true" enum:"action,pointer,focus,value,scroll" doc:"how it was done: the element's own action, a pointer click at its center, a focus grab, a value change or scrolling"`
	Action  string                 `json:"action,omitempty" doc:"the action invoked"`
	// TargetClosed: the element took the action and went away with its
	// window or application (the OK or Yes of a dialog that then exits),
	// which is the action working.
	TargetClosed bool `json:"target_closed,omitempty" doc:"true when the element, or its whole application, closed after taking the action (a dialog's OK, Yes or Submit): the action worked, and element is the element as it was before"`
}

// clickActions are the action names that mean "click", in preference.
var clickActions = []string{"click", "press", "activate", "toggle", "jump", "open"}

// ClickElement clicks an element: its own click-like action when it has
// one (works wherever the element is, even covered), else a pointer click
// at the center of its bounds.
func (s *Service) ClickElement(ctx context.Context, in ElementRef) (ElementResult, error) {
	a, n, err := s.element(ctx, in.ElementID)
	if err != nil {
		return ElementResult{}, err
	}
	for _, want := range clickActions {
		for _, have := range n.Actions {
			if strings.EqualFold(have, want) {
				return s.afterElement(ctx, a, n, "click", "action", have, nil, a.DoAction(ctx, in.ElementID, have))
			}
		}
	}
	if n.Bounds == nil || n.Bounds.Width <= 0 || n.Bounds.Height <= 0 {
		return ElementResult{}, fault.Errorf(fault.CodeConflict,
			"element %s has no click action and no bounds to click at", in.ElementID).WithDetails("elementId")
	}
	at := desktop.Point{X: n.Bounds.X + n.Bounds.Width/2, Y: n.Bounds.Y + n.Bounds.Height/2}
	err = s.input.Click(ctx, at)
	return s.afterElement(ctx, a, n, "click", "pointer", "", at, err)
}

// FocusElement gives an element the keyboard focus.
func (s *Service) FocusElement(ctx context.Context, in ElementRef) (ElementResult, error) {
	a, n, err := s.element(ctx, in.ElementID)
	if err != nil {
		return ElementResult{}, err
	}
	return s.afterElement(ctx, a, n, "focus", "focus", "", nil, a.GrabFocus(ctx, in.ElementID))
}

// ScrollElementIntoView scrolls an element into view.
func (s *Service) ScrollElementIntoView(ctx context.Context, in ElementRef) (ElementResult, error) {
	a, n, err := s.element(ctx, in.ElementID)
	if err != nil {
		return ElementResult{}, err
	}
	return s.afterElement(ctx, a, n, "scroll-into-view", "scroll", "", nil, a.ScrollIntoView(ctx, in.ElementID))
}

// SetElementValue replaces an element's text or value.
func (s *Service) SetElementValue(ctx context.Context, in ElementValue) (ElementResult, error) {
	a, n, err := s.element(ctx, in.ElementID)
	if err != nil {
		return ElementResult{}, err
	}
	args := map[string]string{"value": *in.Body.Value}
	if n.Role == "password text" {
		args["value"] = "(hidden)" // the timeline is for watching, not for the password
	}
	return s.afterElement(ctx, a, n, "set-value", "value", "", args, a.SetValue(ctx, in.ElementID, *in.Body.Value))
}

// ElementDoAction invokes one of the element's actions by name.
func (s *Service) ElementDoAction(ctx context.Context, in ElementAction) (ElementResult, error) {
	a, n, err := s.element(ctx, in.ElementID)
	if err != nil {
		return ElementResult{}, err
	}
	if name := in.Body.Name; slices.Contains(n.Actions, name) {
		return s.afterElement(ctx, a, n, "action", "action", name, map[string]string{"name": name},
			a.DoAction(ctx, in.ElementID, name))
	}
	return ElementResult{}, fault.Invalid("name", "element %s has no action %q", in.ElementID, in.Body.Name).
		WithDetails("actions: %s", strings.Join(n.Actions, ", "))
}

func (s *Service) element(ctx context.Context, id string) (desktop.Accessibility, desktop.AccessibleNode, error) {
	if _, err := s.desk.Current(); err != nil {
		return nil, desktop.AccessibleNode{}, err
	}
	if err := s.desk.Gate(); err != nil {
		return nil, desktop.AccessibleNode{}, err
	}
	a, err := s.accessibility()
	if err != nil {
		return nil, desktop.AccessibleNode{}, err
	}
	n, err := a.Node(ctx, id)
	return a, n, err
}

// afterElement puts the element action op on the recording's timeline
// (as "element-"+op) and answers the element as it is afterwards (err: the
// action's error).
func (s *Service) afterElement(ctx context.Context, a desktop.Accessibility, before desktop.AccessibleNode, op, method, action string, args any, err error) (ElementResult, error) {
	closed := ElementResult{Element: before, Method: method, Action: action, TargetClosed: true}
	if errors.Is(err, desktop.ErrTargetClosed) {
		err = nil
	}
	s.desk.Timeline("element-"+op, args, &core.TimelineTarget{ID: before.ID, Role: before.Role, Name: before.Name}, err)
	if err != nil {
		return ElementResult{}, err
	}
	n, err := a.Node(ctx, before.ID)
	var pe *fault.Error
	if errors.As(err, &pe) && pe.Code == fault.CodeNotFound {
		// It was there just before the action: the action closed it.
		return closed, nil
	}
	if err != nil {
		return ElementResult{}, err
	}
	return ElementResult{Element: n, Method: method, Action: action}, nil
}
