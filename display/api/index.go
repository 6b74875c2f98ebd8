package api

import (
	"context"
)

// Index is GET /api/v1/display/.
type Index struct {
	Service   string          `json:"service" required:"true"`
	Display   string          `json:"display" required:"true" doc:"the X display driven, \"\" when none"`
	Available bool            `json:"available" required:"true"`
	Reason    string          `json:"reason,omitempty" doc:"why the display is unavailable"`
	Width     int             `json:"width"`
	Height    int             `json:"height"`
	Screens   int             `json:"screens"`
	Endpoints []IndexEndpoint `json:"endpoints" required:"true"`
}

// IndexEndpoint is one row of the index.
type IndexEndpoint struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Summary string `json:"summary"`
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
