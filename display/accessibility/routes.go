package accessibility

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes are the tree, the search, the marked screenshot and the element
// actions; the tree and the search answered flat, the marked screenshot
// and each element action are MCP tools too.
func (s *Service) Routes() []platform.Route {
	op := core.Route
	el := "Acts on one element of the accessibility tree by its id (from GET accessibility or its search) and " +
		"answers the element afterwards. An id whose element is gone answers 404."
	marked := op(http.MethodGet, "/screenshots/marked", "takeMarkedScreenshot", "Screenshot with numbered elements",
		"The whole screen as PNG (base64 in image) with a numbered box over every visible interactive element of the "+
			"active window (scope=active, default) or of every application, and marks mapping each number to the "+
			"element's id and bounds: a model that answers \"click 7\" is served by POST accessibility/{element_id}/click. "+
			"Interactive: showing and visible, with bounds on the screen, and an action or a role people act on "+
			"(button, text field, check box, menu item, link, slider ...).", platform.Op(s.MarkedScreenshot))
	marked.Tool = &platform.Tool{Name: "display_screenshot_marked", Title: "Marked screenshot",
		Description: "A screenshot with a numbered box on each interactive element of the active window (scope=all: of " +
			"every application); the marks list says which element id each number is, for display_element_click.",
		Image: "image", ReadOnly: true, Idempotent: true,
		Text: "screenshot {{.width}}x{{.height}} with {{len .marks}} marks{{with .reason}} ({{.}}){{end}}\n" +
			"{{range .marks}}{{.n}}: [{{.role}}] {{printf \"%q\" .name}} id={{.element_id}}\n{{end}}"}
	return append([]platform.Route{
		op(http.MethodGet, "/accessibility", "getAccessibilityTree", "Accessibility tree",
			"The AT-SPI2 tree of the active window (scope=active, default) or of every application on the accessibility "+
				"bus (scope=all). Each node has an id, role, name, description, value, states, actions, screen bounds and "+
				"children. depth limits the levels; role keeps the nodes of that role and their ancestors. When the window's "+
				"application exposes no tree (an xterm, a program without accessibility), nodes is empty and reason says "+
				"so. 503 ACCESSIBILITY_UNAVAILABLE when the service has no accessibility bus.", platform.Op(s.AccessibilityTree)),
		marked,
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
	}, s.elementRoutes()...)
}

// elementTool makes an element action's route the MCP tool name: a model
// names the element element_id, as the reading tools answer it.
func elementTool(r platform.Route, name, title, desc string) platform.Route {
	r.Tool = &platform.Tool{Name: name, Title: title, Description: desc, Destructive: true,
		Args: map[string]string{"elementId": "element_id"},
		Text: "done by {{.method}}{{with .action}} {{.}}{{end}}; {{if .target_closed}}[{{.element.role}}] {{printf \"%q\" .element.name}} " +
			"then closed with its window or application (the action was taken){{else}}the element is now [{{.element.role}}] " +
			"{{printf \"%q\" .element.name}}{{end}}"}
	return r
}
