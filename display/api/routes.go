package api

import (
	"net/http"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Routes is the service's one route table; the same table becomes its
// OpenAPI document.
func (s *Service) Routes() []platform.Route {
	get := func(path, summary, desc string, resp any, h fiber.Handler) platform.Route {
		return platform.Route{Method: http.MethodGet, Path: prefix + path, Summary: summary, Description: desc,
			Response: resp, Tags: []string{"display"}, Handler: h}
	}
	post := func(path, summary, desc string, body, resp any, h fiber.Handler) platform.Route {
		return platform.Route{Method: http.MethodPost, Path: prefix + path, Summary: summary, Description: desc,
			Body: body, Response: resp, Tags: []string{"display"}, Handler: h}
	}
	winParam := "Window ids are X11 window ids, decimal or 0x-hex; an id that is not a window answers 404."
	shot := get("/screenshots", "Screenshot of the screen or a region",
		"PNG (default) or JPEG bytes with their Content-Type. quality (1-100, default 80) applies to JPEG; "+
			"PNG is always lossless. A region (x, y, width, height; x and y default to 0, width and height to the rest "+
			"of the screen) must lie on the screen, else 400 OFF_SCREEN with the bounds. scale (0,1] shrinks with an "+
			"area filter (coverage-weighted mean, alias-free). cursor=true draws the pointer in. Headers X-Image-Width and "+
			"X-Image-Height give the size.", nil, s.screenshot)
	shot.ContentType = "image/png"
	shot.Query = []platform.Param{
		{Name: "format", Enum: []string{"png", "jpeg"}, Description: "png (default) or jpeg (jpg accepted)"},
		{Name: "quality", Type: "integer", Description: "JPEG quality 1-100, default 80"},
		{Name: "x", Type: "integer"}, {Name: "y", Type: "integer"},
		{Name: "width", Type: "integer"}, {Name: "height", Type: "integer"},
		{Name: "scale", Type: "number", Description: "(0,1], default 1"},
		{Name: "cursor", Type: "boolean", Description: "draw the mouse pointer, default false"},
	}
	clipGet := get("/clipboard", "Read the clipboard",
		"{\"text\"} from the CLIPBOARD selection (empty when nothing holds it). format=png (or image) answers the "+
			"image bytes when the clipboard holds an image, else 404; the JSON answer adds has_image=true when "+
			"it does, and targets=true lists the formats the owner offers.", ClipboardView{}, s.clipboardGet)
	clipGet.Query = []platform.Param{{Name: "format", Enum: []string{"text", "png", "image"}},
		{Name: "selection", Enum: []string{"clipboard", "primary"}, Description: "default clipboard"},
		{Name: "targets", Type: "boolean", Description: "also list the offered formats"}}
	winList := get("/windows", "List top-level windows",
		"Managed top-level windows (the window manager's _NET_CLIENT_LIST, or mapped children of the root "+
			"without one) with real geometry: x and y are the client area's position on the root window, as "+
			"xdotool getwindowgeometry reports it.", []Window{}, s.windows)
	return []platform.Route{
		get("/", "Describe the display service", "Index of the service: which display it drives, whether it is "+
			"available, its screen size and every path it serves.", Index{}, s.index),
		get("/info", "Screen size and monitors", "width and height of the root window and each monitor "+
			"(Xinerama heads, else RandR outputs, else the one screen).", Info{}, s.info),
		shot,
		clipGet,
		post("/clipboard", "Set the clipboard", "Takes ownership of CLIPBOARD with text, or with an image "+
			"(image_base64 and mime_type, image/png by default). The service keeps serving it until something "+
			"else takes the clipboard. Answers {\"text\"} as GET would.", ClipboardSet{}, ClipboardView{}, s.clipboardSet),
		winList,
		get("/window/active", "The active window", "The window manager's _NET_ACTIVE_WINDOW (else the input focus). "+
			"404 when no window is active.", Window{}, s.activeWindow),
		get("/window/{windowId}/properties", "Everything known about a window", winParam, WindowProperties{}, s.windowProperties),
		get("/window/{windowId}/geometry", "A window's position and size", winParam, Geometry{}, s.windowGeometry),
		get("/window/{windowId}/name", "A window's title", winParam, WindowName{}, s.windowName),
		post("/window/focus", "Focus (activate) a window", "Raises, de-iconifies and activates it through the "+
			"window manager. "+windowBody, WindowRef{}, Window{}, s.act("focus-window")),
		post("/window/move", "Move a window", "Places the window's client area at x,y (root coordinates) and "+
			"answers its geometry once the window manager has moved it. "+windowBody, WindowMove{}, Window{}, s.act("move-window")),
		post("/window/resize", "Resize a window", "Sets the client area's size (1-16384). "+windowBody,
			WindowResize{}, Window{}, s.act("resize-window")),
		post("/window/minimize", "Minimize (iconify) a window", windowBody, WindowRef{}, Window{}, s.act("minimize-window")),
		post("/window/close", "Close a window", "Asks politely (_NET_CLOSE_WINDOW / WM_DELETE_WINDOW) and answers "+
			"closed=true once it is gone, closed=false when it is still there after 2 s. "+windowBody,
			WindowRef{}, Closed{}, s.act("close-window")),
		post("/window/raise", "Raise a window", "Puts it on top of the stack without focusing it. "+windowBody,
			WindowRef{}, Window{}, s.act("raise-window")),
		post("/window/search", "Find windows", "Windows whose title (name) and/or WM_CLASS (class) match Go "+
			"regular expressions (use (?i) for case-insensitive) and/or whose pid is pid; at least one criterion.",
			WindowSearch{}, []Window{}, s.windowSearch),
		post("/mouse/click", "Click", "Moves to x,y when given (both or neither), then clicks button "+
			"(left, right, middle; default left) clicks times (1-3). Answers the pointer position.", MouseClick{}, Point{}, s.act("click")),
		post("/mouse/double-click", "Double-click", "As click, twice.", MouseClick{}, Point{}, s.act("double-click")),
		post("/mouse/move", "Move the pointer", "Off-screen coordinates are 400 OFF_SCREEN with the bounds.",
			Point{}, Point{}, s.act("move")),
		post("/mouse/move-relative", "Move the pointer by dx,dy", "The destination must be on screen.",
			MouseMoveRelative{}, Point{}, s.act("move-relative")),
		post("/mouse/down", "Press a button and keep it down", "Moves to x,y first when given. Held until "+
			"mouse/up or input/reset.", MouseButton{}, Point{}, s.act("down")),
		post("/mouse/up", "Release a button", "", MouseButton{}, Point{}, s.act("up")),
		post("/mouse/scroll", "Scroll the wheel", "direction up, down (default), left or right, amount notches "+
			"(1-100, default 1), at x,y when given.", MouseScroll{}, Point{}, s.act("scroll")),
		get("/mouse/location", "Where the pointer is", "", Point{}, s.mouseLocation),
		post("/keyboard/type", "Type text", "Types Unicode text as key presses (characters the keymap lacks "+
			"are bound to a spare keycode for the moment). delay_ms (0-1000, default 0) waits between characters. "+
			"At most 20000 characters.", KeyboardType{}, Typed{}, s.act("type")),
		post("/keyboard/key", "Press a key or chord", "key is an X keysym name (Return, Page_Up, F5), an alias "+
			"(enter, esc, ctrl, cmd, ArrowUp) or one character; \"ctrl+shift+t\" chords work too. modifiers are held "+
			"around it. repeat presses it 1-100 times. An unknown name is 400 listing close matches.",
			KeyboardKey{}, KeyResult{}, s.act("key")),
		post("/keyboard/key-down", "Press a key and keep it down", "Held until key-up or input/reset.",
			KeyboardKeyOnly{}, KeyResult{}, s.act("key-down")),
		post("/keyboard/key-up", "Release a key", "", KeyboardKeyOnly{}, KeyResult{}, s.act("key-up")),
		post("/input/click-at", "Move and click", "x and y are required.", ClickAt{}, Point{}, s.act("click-at")),
		post("/input/type-at", "Click a spot, then type", "Clicks x,y, optionally clears the field (ctrl+a, "+
			"Delete) and types text.", TypeAt{}, Typed{}, s.act("type-at")),
		post("/input/drag", "Drag from one point to another", "Presses button (default left) at from, moves "+
			"to to in steps over duration_ms (0-10000, default 100), releases.", Drag{}, DragResult{}, s.act("drag")),
		post("/input/select", "Select by dragging, answer the selection", "A left-button drag from from to to; "+
			"answers the PRIMARY selection's text afterwards (what the application selected).", Drag{}, DragResult{}, s.act("select")),
		post("/input/act", "Run one action", "One step in the batch format ({\"action\": ..., fields}). Answers "+
			"the step result; a failing step is an error answer.", Step{}, StepResult{}, s.actOne),
		post("/input/wait", "Wait for a window, a screen change or a time", "until: window (a window matching "+
			"name/class/pid appears), window-gone (none is left), region-change (the pixels of region, default the "+
			"whole screen, change), or timeout (just wait). timeout_ms 1-300000, default 10000. Answers met=false "+
			"when the time ran out (a batch step fails then with WAIT_TIMEOUT).", Wait{}, WaitResult{}, s.waitHandler),
		post("/input/batch", "Run a list of actions", "Every step is validated (fields, key names, screen "+
			"bounds, regular expressions) before any step runs; an invalid batch is 400 naming steps[i].field. Steps "+
			"then run in order and the batch stops at the first failure. A click followed by a key or type step "+
			"waits (up to 500 ms) for the window manager to focus the clicked window. Answers per-step results; ok=false and "+
			"failed_index when a step failed. At most 1000 steps; input from other clients waits until it ends.",
			Batch{}, BatchResult{}, s.batch),
		post("/input/reset", "Release every held key and button", "Releases what this service pressed and "+
			"everything the X server reports down.", nil, ResetResult{}, s.reset),
		get("/input/display-geometry", "Root window size", "Like xdotool getdisplaygeometry.", Geometry{}, s.displayGeometry),
	}
}

const windowBody = "id selects the window (default: the active one)."
