package api

import (
	"context"
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

// Describe answers the service's index: its display, whether it is
// available, the screen size and every path it serves.
func (s *Service) Describe(context.Context) (Index, error) {
	idx := Index{Service: "display", Endpoints: []IndexEndpoint{}}
	for _, r := range s.Routes() {
		idx.Endpoints = append(idx.Endpoints, IndexEndpoint{Method: r.Method, Path: r.Path, Summary: r.Summary})
	}
	d := s.desk.Driver()
	if d == nil {
		idx.Reason = s.desk.Reason()
		return idx, nil
	}
	idx.Display = d.Display()
	info, err := d.Info()
	if err != nil {
		return Index{}, err
	}
	idx.Available = true
	idx.Width, idx.Height, idx.Screens = info.Width, info.Height, len(info.Displays)
	return idx, nil
}
