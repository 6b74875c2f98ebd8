package api

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
