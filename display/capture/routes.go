package capture

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes are the screen's info and screenshots.
func (s *Service) Routes() []platform.Route {
	shot := core.Route(http.MethodGet, "/screenshots", "takeScreenshot", "Screenshot of the screen or a region",
		"PNG (default) or JPEG bytes with their Content-Type. quality (1-100, default 80) applies to JPEG; "+
			"PNG is always lossless. A region (x, y, width, height; x and y default to 0, width and height to the rest "+
			"of the screen) must lie on the screen, else 400 OFF_SCREEN with the bounds. scale (0,1] shrinks with an "+
			"area filter (coverage-weighted mean, alias-free). cursor=true draws the pointer in. Headers X-Image-Width and "+
			"X-Image-Height give the size.", platform.Op(s.Screenshot))
	shot.ContentType = "image/png"
	return []platform.Route{
		core.Route(http.MethodGet, "/info", "getScreenInfo", "Screen size and monitors", "width and height of the root window and each monitor "+
			"(Xinerama heads, else RandR outputs, else the one screen).", platform.ReadOp(s.ScreenInfo)),
		shot,
	}
}
