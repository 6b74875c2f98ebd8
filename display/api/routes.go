package api

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the service's one route table; the same table becomes its
// OpenAPI document.
func (s *Service) Routes() []platform.Route {
	op := func(method, path, id, summary, desc string, o platform.Operation) platform.Route {
		return platform.Route{Method: method, Path: prefix + path, OperationID: id, Summary: summary, Description: desc,
			Tags: []string{"display"}, Op: o}
	}
	winParam := "Window ids are X11 window ids, decimal or 0x-hex; an id that is not a window answers 404."
	shot := op(http.MethodGet, "/screenshots", "takeScreenshot", "Screenshot of the screen or a region",
		"PNG (default) or JPEG bytes with their Content-Type. quality (1-100, default 80) applies to JPEG; "+
			"PNG is always lossless. A region (x, y, width, height; x and y default to 0, width and height to the rest "+
			"of the screen) must lie on the screen, else 400 OFF_SCREEN with the bounds. scale (0,1] shrinks with an "+
			"area filter (coverage-weighted mean, alias-free). cursor=true draws the pointer in. Headers X-Image-Width and "+
			"X-Image-Height give the size.", platform.Op(s.Screenshot))
	shot.ContentType = "image/png"
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
	el := "Acts on one element of the accessibility tree by its id (from GET accessibility or its search) and " +
		"answers the element afterwards. An id whose element is gone answers 404."
	routes := []platform.Route{
		op(http.MethodGet, "/", "describeDisplay", "Describe the display service", "Index of the service: which display it drives, whether it is "+
			"available, its screen size and every path it serves.", platform.ReadOp(s.Describe)),
		op(http.MethodGet, "/info", "getScreenInfo", "Screen size and monitors", "width and height of the root window and each monitor "+
			"(Xinerama heads, else RandR outputs, else the one screen).", platform.ReadOp(s.ScreenInfo)),
		shot,
		clipGet,
		clipImage,
		winList,
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
	routes = append(routes,
		op(http.MethodGet, "/accessibility", "getAccessibilityTree", "Accessibility tree",
			"The AT-SPI2 tree of the active window (scope=active, default) or of every application on the accessibility "+
				"bus (scope=all). Each node has an id, role, name, description, value, states, actions, screen bounds and "+
				"children. depth limits the levels; role keeps the nodes of that role and their ancestors. When the window's "+
				"application exposes no tree (an xterm, a program without accessibility), nodes is empty and reason says "+
				"so. 503 ACCESSIBILITY_UNAVAILABLE when the service has no accessibility bus.", platform.Op(s.AccessibilityTree)),
		op(http.MethodGet, "/screenshots/marked", "takeMarkedScreenshot", "Screenshot with numbered elements",
			"The whole screen as PNG (base64 in image) with a numbered box over every visible interactive element of the "+
				"active window (scope=active, default) or of every application, and marks mapping each number to the "+
				"element's id and bounds: a model that answers \"click 7\" is served by POST accessibility/{element_id}/click. "+
				"Interactive: showing and visible, with bounds on the screen, and an action or a role people act on "+
				"(button, text field, check box, menu item, link, slider ...).", platform.Op(s.MarkedScreenshot)),
		op(http.MethodGet, "/accessibility/search", "searchAccessibility", "Find accessible elements",
			"The elements whose role is role (exactly) and whose name contains name (case-insensitive), each without "+
				"children, from every application (scope=all, default) or the active window.", platform.Op(s.SearchAccessibility)),
		elementTool(op(http.MethodPost, "/accessibility/{elementId}/click", "clickElement", "Click an element", el+" The element's "+
			"own click-like action (click, press, activate, toggle, jump, open) when it has one, else a pointer click at "+
			"the center of its bounds (method says which). A click that closes the element's dialog or application (an OK "+
			"or Yes that ends the program) is 200 with target_closed true and the element as it was.", platform.Op(s.ClickElement)),
			"display_element_click", "Click an element", "Click an element by id: its own click-like action when it has one "+
				"(works even when covered), else a pointer click at the center of its bounds. A click that closes its dialog "+
				"or application answers target_closed true: the click worked."),
		elementTool(op(http.MethodPost, "/accessibility/{elementId}/focus", "focusElement", "Focus an element", el, platform.Op(s.FocusElement)),
			"display_element_focus", "Focus an element", "Give an element the keyboard focus, by element id."),
		elementTool(op(http.MethodPost, "/accessibility/{elementId}/set-value", "setElementValue", "Set an element's value", el+
			" Replaces an editable text's contents, or sets a range's (slider, spin button) value from a number; "+
			"other elements answer 409.", platform.Op(s.SetElementValue)),
			"display_element_set_value", "Set an element's value",
			"Replace an editable text's contents, or set a range's (slider, spin button) value, by element id."),
		elementTool(op(http.MethodPost, "/accessibility/{elementId}/action", "invokeElementAction", "Invoke an element's action",
			el+" name is one of the element's actions; another name is 400 listing them.", platform.Op(s.ElementDoAction)),
			"display_element_action", "Invoke an element's action",
			"Invoke one of an element's named actions (its actions list: press, activate, toggle ...), by element id."),
		elementTool(op(http.MethodPost, "/accessibility/{elementId}/scroll-into-view", "scrollElementIntoView", "Scroll an element into view",
			el+" Asks the element's toolkit to scroll it into view by the least it can (AT-SPI Component.ScrollTo, "+
				"ATSPI_SCROLL_ANYWHERE); where the toolkit does not (GTK 3), moves the scroll bars of each scroll pane "+
				"around the element by the least that puts the element inside the pane. The element's bounds in the "+
				"answer are where it is afterwards. 409 when the toolkit does not scroll it and no scroll pane holds it.",
			platform.Op(s.ScrollElementIntoView)),
			"display_element_scroll_into_view", "Scroll an element into view",
			"Scroll the panes around an element until it shows, by element id."),
	)
	rec := "Recordings: the screen as an ffmpeg x11grab child, mp4 (H.264) or webm (VP9), at most one at a time. "
	start := op(http.MethodPost, "/recordings", "startRecording", "Start recording the screen", rec+
		"It stops by itself at max_seconds or max_bytes (stop_reason time_limit or size_limit). Every display action "+
		"taken while it records (input, batch steps, element actions) goes on its timeline. 409 while another records, "+
		"and 409 naming --display-recordings-max-total when the kept videos and this one's max_bytes together would pass it.",
		platform.Op(s.StartRecording))
	start.Status = http.StatusCreated
	start.Tool = &platform.Tool{Name: "display_recording_start", Title: "Start recording the screen",
		Description: "Start recording the screen (one recording at a time). Every display action taken while it runs " +
			"goes to its timeline. Stop it with display_recording_stop; it also stops by itself at max_seconds."}
	stop := op(http.MethodPost, "/recordings/{id}/stop", "stopRecording", "Stop a recording",
		"Asks ffmpeg to finish the file and answers once it has (the video is then complete).", platform.Op(s.StopRecording))
	stop.Tool = &platform.Tool{Name: "display_recording_stop", Title: "Stop a recording",
		Description: "Stop a recording by id (from display_recording_start or display_recordings); it answers once the video is finished."}
	video := op(http.MethodGet, "/recordings/{id}", "getRecordingVideo", "Download a recording", rec+
		"The video of a stopped recording; 409 while it records.", platform.Op(s.RecordingVideo))
	video.ContentType = "video/mp4"
	vtt := op(http.MethodGet, "/recordings/{id}/timeline.vtt", "getRecordingTimelineVTT", "A recording's timeline as WebVTT",
		"The timeline as subtitles to play beside the video: each action is a cue from its moment to the next.",
		platform.Op(s.RecordingVTT))
	vtt.ContentType = "text/vtt"
	del := op(http.MethodDelete, "/recordings/{id}", "deleteRecording", "Delete a recording",
		"Stops it if it records, then deletes its video and timeline.", platform.CommandOp(s.DeleteRecording))
	del.Status = http.StatusNoContent
	routes = append(routes, start,
		op(http.MethodGet, "/recordings", "listRecordings", "List recordings", rec+"Newest first.", platform.ReadOp(s.Recordings)),
		stop,
		video,
		op(http.MethodGet, "/recordings/{id}/timeline", "getRecordingTimeline", "A recording's timeline",
			"Every display action taken while it recorded: offset_ms from the start, time, action, args as sent, the "+
				"element for element actions, ok and error.", platform.Op(s.RecordingTimeline)),
		vtt, del)
	tk := "Human takeover: a person watches or drives the desktop in the browser (noVNC from Debian) through this " +
		"service, under the same request policy and proxy permissions as every route; x11vnc serves it on a unix " +
		"socket in a private directory, with no TCP port. "
	page := op(http.MethodGet, "/vnc/", "openTakeoverView", "The takeover view", tk+"Opens noVNC connected to "+
		"vnc/websockify. mode=control (default) lets the person drive: the agent's running input finishes first, then "+
		"every input route answers 409 TAKEN_OVER until they leave. mode=view only watches (x11vnc -viewonly).",
		platform.Op(s.VNCPage))
	page.ContentType = "text/html"
	ws := op(http.MethodGet, "/vnc/websockify", "connectTakeover", "The takeover's VNC WebSocket", tk+
		"RFB over a binary WebSocket between noVNC and x11vnc, in the mode asked.", platform.StreamOp(s.ServeVNC))
	ws.WebSocket, ws.Status = true, http.StatusSwitchingProtocols
	asset := op(http.MethodGet, "/vnc/{file...}", "getTakeoverAsset", "A file of the noVNC client",
		"The files of Debian's noVNC client that the takeover page loads.", platform.Op(s.VNCAsset))
	asset.ContentType = "application/octet-stream"
	routes = append(routes, page, ws, asset,
		op(http.MethodGet, "/takeover", "getTakeover", "Who drives the desktop", tk+"Whether the agent paused, "+
			"and how many people drive or watch.", platform.ReadOp(s.TakeoverState)),
		op(http.MethodPost, "/takeover", "pauseAgent", "Pause the agent for a person", tk+"The agent asks a person "+
			"to drive (reason says what for): its running input finishes, then its input routes answer 409 "+
			"TAKEN_OVER until DELETE takeover.", platform.Op(s.PauseAgent)),
		op(http.MethodDelete, "/takeover", "resumeAgent", "Resume the agent", "Ends the pause; while a person is "+
			"still connected with control the agent's input stays refused.", platform.ReadOp(s.ResumeAgent)),
	)
	// every action's own endpoint, from the action table
	return append(routes, s.actionRoutes()...)
}

// elementTool makes an element action's route the MCP tool name: a model
// names the element element_id, as the reading tools answer it.
func elementTool(r platform.Route, name, title, desc string) platform.Route {
	r.Tool = &platform.Tool{Name: name, Title: title, Description: desc, Destructive: true,
		Args: map[string]string{"elementId": "element_id"}}
	return r
}
