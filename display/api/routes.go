package api

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes is the service's one route table, its concerns' together; the
// same table becomes its OpenAPI document.
func (s *Service) Routes() []platform.Route {
	routes := []platform.Route{
		core.Route(http.MethodGet, "/", "describeDisplay", "Describe the display service", "Index of the service: which display it drives, whether it is "+
			"available, its screen size and every path it serves.", platform.ReadOp(s.Describe)),
	}
	routes = append(routes, s.Capture.Routes()...)
	routes = append(routes, s.Input.Routes()...)
	routes = append(routes, s.Accessibility.Routes()...)
	routes = append(routes, s.Recordings.Routes()...)
	routes = append(routes, s.Takeover.Routes()...)
	// every action's own endpoint, from the action table
	return append(routes, s.Input.Actions()...)
}
