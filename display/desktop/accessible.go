package desktop

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
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
	return slices.Contains(n.States, state)
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

// ErrTargetClosed is what an Accessibility answers when the element's
// application left the bus while it acted (its reply never came): the
// action was taken, the application is gone.
var ErrTargetClosed = errors.New("the element's application closed while it acted")
