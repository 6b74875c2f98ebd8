package input

import (
	"context"
	"net/http"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform"
)

// WindowList is the top-level windows as an object.
type WindowList struct {
	Windows []desktop.Window `json:"windows" required:"true"`
}

// windowListRoute is GET .../window/list, the display_windows tool.
func (s *Service) windowListRoute() platform.Route {
	r := core.Route(http.MethodGet, "/window/list", "getWindowList", "List top-level windows as an object",
		"What GET windows answers, as {\"windows\": [...]}: for a client that takes only an object (an MCP tool).",
		platform.ReadOp(s.WindowList))
	r.Tool = &platform.Tool{Name: "display_windows", Title: "List windows",
		Description: "The top-level windows: id, title, pid, position and size in screen pixels, and which is active.",
		Text:        "{{range .windows}}{{.id}} {{printf \"%q\" .name}} at {{.x}},{{.y}} {{.width}}x{{.height}} active={{.active}}\n{{end}}",
		ReadOnly:    true, Idempotent: true}
	return r
}

// WindowList answers the managed top-level windows as an object.
func (s *Service) WindowList(ctx context.Context) (WindowList, error) {
	ws, err := s.Windows(ctx)
	return WindowList{Windows: ws}, err
}
