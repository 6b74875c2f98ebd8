package input

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes are the windows', the clipboard's and the input engine's routes;
// Actions are the action table's own endpoints. The window list as an
// object is an MCP tool too.
func (s *Service) Routes() []platform.Route {
	op := core.Route
	winParam := "Window ids are X11 window ids, decimal or 0x-hex; an id that is not a window answers 404."
	clipGet := op(http.MethodGet, "/clipboard", "getClipboard", "Read the clipboard",
		"{\"text\"} from the CLIPBOARD selection (or PRIMARY with selection=primary; empty when nothing holds it); "+
			"has_image=true when it holds an image, and targets=true lists the formats the owner offers. "+
			"format=png (or image) answers 303 See Other to clipboard/image, which serves the image bytes.",
		platform.Op(s.ClipboardGet))
	clipGet.Statuses = []int{http.StatusSeeOther}
	clipImage := op(http.MethodGet, "/clipboard/image", "getClipboardImage", "The image on the clipboard",
		"The image bytes with their Content-Type when the selection holds an image, else 404.", platform.Op(s.ClipboardImage))
	clipImage.ContentType = "application/octet-stream"
	winList := op(http.MethodGet, "/windows", "listWindows", "List top-level windows",
		"Managed top-level windows (the window manager's _NET_CLIENT_LIST, or mapped children of the root "+
			"without one) with real geometry: x and y are the client area's position on the root window, as "+
			"xdotool getwindowgeometry reports it.", platform.ReadOp(s.Windows))
	return []platform.Route{
		clipGet,
		clipImage,
		winList,
		s.windowListRoute(),
		op(http.MethodGet, "/window/active", "getActiveWindow", "The active window", "The window manager's _NET_ACTIVE_WINDOW (else the input focus). "+
			"404 when no window is active.", platform.ReadOp(s.ActiveWindow)),
		op(http.MethodGet, "/window/{windowId}/properties", "getWindowProperties", "Everything known about a window", winParam, platform.Op(s.WindowProperties)),
		op(http.MethodGet, "/window/{windowId}/geometry", "getWindowGeometry", "A window's position and size", winParam, platform.Op(s.WindowGeometry)),
		op(http.MethodGet, "/window/{windowId}/name", "getWindowName", "A window's title", winParam, platform.Op(s.WindowName)),
		op(http.MethodPost, "/window/search", "searchWindows", "Find windows", "Windows whose title (name) and/or "+
			"WM_CLASS (class) match Go regular expressions (use (?i) for case-insensitive) and/or whose pid is pid; "+
			"at least one criterion.", platform.Op(s.SearchWindows)),
		op(http.MethodGet, "/mouse/location", "getMouseLocation", "Where the pointer is", "", platform.ReadOp(s.MouseLocation)),
		op(http.MethodGet, "/input/display-geometry", "getDisplayGeometry", "Root window size", "Like xdotool getdisplaygeometry.", platform.ReadOp(s.DisplayGeometry)),
		op(http.MethodPost, "/input/act", "actOne", "Run one action", "One step in the batch format ({\"action\": ..., fields}): the "+
			"action's name or alias and the fields of its own endpoint's body; a field the action does not take "+
			"is 400. Answers the step result; a failing step is an error answer.", platform.Op(s.Act)),
		op(http.MethodPost, "/input/batch", "runBatch", "Run a list of actions", "Each step is {\"action\": ..., fields} as for input/act. "+
			"Every step is validated (fields, key names, screen bounds, regular expressions) before any step runs; "+
			"an invalid batch is 400 naming steps[i].field. Steps then run in order and the batch stops at the "+
			"first failure. A click followed by a key or type step waits (up to 500 ms) for the window manager to "+
			"focus the clicked window. Answers per-step results; ok=false and failed_index when a step failed. At "+
			"most 1000 steps; input from other clients waits until it ends.", platform.Op(s.RunBatch)),
	}
}
