package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"deckhand/platform/fault"
)

// CodeNoAccessibility: the accessibility bus cannot be reached.
const CodeNoAccessibility = "ACCESSIBILITY_UNAVAILABLE"

func init() {
	fault.RegisterCode(CodeNoAccessibility, http.StatusServiceUnavailable)
}

// AccessibleNode is one element of an application's accessibility tree
// (AT-SPI2).
type AccessibleNode struct {
	ID          string           `json:"id" required:"true" doc:"stable while the element exists: the application's bus name and the element's object path"`
	Role        string           `json:"role" required:"true" doc:"the AT-SPI role name: push button, text, frame, check box ..."`
	Name        string           `json:"name" required:"true"`
	Description string           `json:"description" required:"true"`
	Value       string           `json:"value" required:"true" doc:"a text element's text or a range's current value; empty otherwise"`
	States      []string         `json:"states" required:"true" doc:"AT-SPI states: focused, enabled, sensitive, showing, visible, checked, editable ..."`
	Actions     []string         `json:"actions" required:"true" doc:"names of the actions POST .../action can invoke"`
	Bounds      *Rect            `json:"bounds" doc:"screen coordinates; null for an element without a component"`
	Children    []AccessibleNode `json:"children" required:"true"`
}

// Has reports whether the node holds state.
func (n AccessibleNode) Has(state string) bool {
	for _, s := range n.States {
		if s == state {
			return true
		}
	}
	return false
}

// AccessibilityTree answers GET .../accessibility.
type AccessibilityTree struct {
	Nodes  []AccessibleNode `json:"nodes" required:"true"`
	Reason string           `json:"reason,omitempty" doc:"why nodes is empty: the window's application exposes no tree"`
}

// AccessibleApp is an application registered on the accessibility bus.
type AccessibleApp struct {
	Root AccessibleNode // the application node (role "application"), its children the windows
	PID  int            // 0 when the bus does not say
}

// Accessibility is the accessibility bus behind the service. display/atspi
// implements it over D-Bus.
type Accessibility interface {
	// Apps lists the registered applications (pid 0: all, else those of
	// that process), each tree to depth levels below the application
	// (depth < 0: all).
	Apps(ctx context.Context, pid, depth int) ([]AccessibleApp, error)
	// Node reads one element without its children; fault.NotFound when
	// it is gone.
	Node(ctx context.Context, id string) (AccessibleNode, error)
	// DoAction invokes the element's action called name.
	DoAction(ctx context.Context, id, name string) error
	GrabFocus(ctx context.Context, id string) error
	// ScrollIntoView scrolls what holds the element until the element is
	// in view.
	ScrollIntoView(ctx context.Context, id string) error
	// SetValue replaces an editable text's contents, or sets a range's
	// value (value is then a number).
	SetValue(ctx context.Context, id, value string) error
	Close() error
}

// SetAccessibility attaches the accessibility bus (nil: none).
func (s *Service) SetAccessibility(a Accessibility) {
	if a == nil {
		s.a11y.Store(nil)
		return
	}
	s.a11y.Store(&a11yBox{a: a})
}

type a11yBox struct{ a Accessibility }

func (s *Service) accessibility() (Accessibility, error) {
	if b := s.a11y.Load(); b != nil && b.a != nil {
		return b.a, nil
	}
	return nil, &fault.Error{Code: CodeNoAccessibility, Message: "the display service has no accessibility bus",
		Details: "it needs the session D-Bus (DBUS_SESSION_BUS_ADDRESS) with at-spi2-core, or AT_SPI_BUS_ADDRESS"}
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
func (s *Service) tree(ctx context.Context, scope string, depth int) ([]AccessibleNode, string, error) {
	d, err := s.driver()
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
		nodes := []AccessibleNode{}
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
			return []AccessibleNode{}, "no window is active", nil
		}
		return nil, "", err
	}
	if w.PID == 0 {
		return []AccessibleNode{}, fmt.Sprintf("the active window %q does not say its process (_NET_WM_PID), so its "+
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
		return []AccessibleNode{frame}, "", nil
	}
	return []AccessibleNode{}, fmt.Sprintf("the active window %q (pid %d) exposes no accessibility tree", w.Name, w.PID), nil
}

// activeFrame picks the window of the application's tree that is the X
// window: the one AT-SPI calls active, else the one with its title, else
// the one at its place.
func activeFrame(apps []AccessibleApp, w Window) (AccessibleNode, bool) {
	var frames []AccessibleNode
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
		if f.Bounds != nil && (Rect{X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}).Contains(Point{f.Bounds.X + f.Bounds.Width/2, f.Bounds.Y + f.Bounds.Height/2}) {
			return f, true
		}
	}
	return AccessibleNode{}, false
}

// pruneToRole keeps the nodes of role and their ancestors.
func pruneToRole(nodes []AccessibleNode, role string) []AccessibleNode {
	out := []AccessibleNode{}
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
	out := []AccessibleNode{}
	walk(nodes, func(n AccessibleNode) {
		if (q.Role == "" || n.Role == q.Role) && (name == "" || strings.Contains(strings.ToLower(n.Name), name)) {
			n.Children = []AccessibleNode{}
			out = append(out, n)
		}
	})
	return AccessibilityTree{Nodes: out, Reason: reason}, nil
}

func walk(nodes []AccessibleNode, fn func(AccessibleNode)) {
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
	_, _, err := ParseElementID(r.ElementID)
	return err
}

// accessiblePrefix is where toolkits put their elements' object paths.
const accessiblePrefix = "/org/a11y/atspi/accessible/"

// ElementID names the element at path of the application with the unique
// bus name bus (":1.42"): "1.42~12" for the common object paths
// (/org/a11y/atspi/accessible/12), "1.42~_" and the path in unpadded
// base64url for any other.
func ElementID(bus, path string) string {
	b := strings.TrimPrefix(bus, ":")
	if rest, ok := strings.CutPrefix(path, accessiblePrefix); ok && rest != "" && !strings.ContainsAny(rest, "/_~") {
		return b + "~" + rest
	}
	return b + "~_" + base64.RawURLEncoding.EncodeToString([]byte(path))
}

// ParseElementID is ElementID's inverse.
func ParseElementID(id string) (bus, path string, err error) {
	b, rest, ok := strings.Cut(id, "~")
	bad := func() (string, string, error) {
		return "", "", fault.Invalid("elementId", "must be an element id from the tree (like 1.42~12), got %q", id)
	}
	if !ok || b == "" || rest == "" || strings.Trim(b, "0123456789.") != "" {
		return bad()
	}
	if enc, ok := strings.CutPrefix(rest, "_"); ok {
		p, err := base64.RawURLEncoding.DecodeString(enc)
		if err != nil || len(p) == 0 || p[0] != '/' {
			return bad()
		}
		return ":" + b, string(p), nil
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return bad()
		}
	}
	return ":" + b, accessiblePrefix + rest, nil
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
	Element AccessibleNode `json:"element" required:"true" doc:"the element afterwards; as it was before when target_closed"`
	Method  string         `json:"method" required:"true" enum:"action,pointer,focus,value,scroll" doc:"how it was done: the element's own action, a pointer click at its center, a focus grab, a value change or scrolling"`
	Action  string         `json:"action,omitempty" doc:"the action invoked"`
	// TargetClosed: the element took the action and went away with its
	// window or application (the OK or Yes of a dialog that then exits),
	// which is the action working.
	TargetClosed bool `json:"target_closed,omitempty" doc:"true when the element, or its whole application, closed after taking the action (a dialog's OK, Yes or Submit): the action worked, and element is the element as it was before"`
}

// ErrTargetClosed is what an Accessibility answers when the element's
// application left the bus while it acted (its reply never came): the
// action was taken, the application is gone.
var ErrTargetClosed = errors.New("the element's application closed while it acted")

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
	at := Point{n.Bounds.X + n.Bounds.Width/2, n.Bounds.Y + n.Bounds.Height/2}
	_, err = s.runOne(ctx, plan{action: lookup("click"), body: &MouseClick{clicking: clicking{spot: spot{at: &at}, button: ButtonLeft, clicks: 1}}}, false)
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
	for _, have := range n.Actions {
		if have == in.Body.Name {
			return s.afterElement(ctx, a, n, "action", "action", have, map[string]string{"name": have},
				a.DoAction(ctx, in.ElementID, have))
		}
	}
	return ElementResult{}, fault.Invalid("name", "element %s has no action %q", in.ElementID, in.Body.Name).
		WithDetails("actions: %s", strings.Join(n.Actions, ", "))
}

func (s *Service) element(ctx context.Context, id string) (Accessibility, AccessibleNode, error) {
	if _, err := s.driver(); err != nil {
		return nil, AccessibleNode{}, err
	}
	if err := s.takenOver(); err != nil {
		return nil, AccessibleNode{}, err
	}
	a, err := s.accessibility()
	if err != nil {
		return nil, AccessibleNode{}, err
	}
	n, err := a.Node(ctx, id)
	return a, n, err
}

// afterElement puts the element action op on the recording's timeline
// (as "element-"+op) and answers the element as it is afterwards (err: the
// action's error).
func (s *Service) afterElement(ctx context.Context, a Accessibility, before AccessibleNode, op, method, action string, args any, err error) (ElementResult, error) {
	closed := ElementResult{Element: before, Method: method, Action: action, TargetClosed: true}
	if errors.Is(err, ErrTargetClosed) {
		err = nil
	}
	s.timeline("element-"+op, args, &TimelineTarget{ID: before.ID, Role: before.Role, Name: before.Name}, err)
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
