package capture

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes are the screen's info and screenshots; the scaled screenshot is
// the MCP tool display_screenshot too.
func (s *Service) Routes() []platform.Route {
	shot := core.Route(http.MethodGet, "/screenshots", "takeScreenshot", "Screenshot of the screen or a region",
		"PNG (default) or JPEG bytes with their Content-Type. quality (1-100, default 80) applies to JPEG; "+
			"PNG is always lossless. A region (x, y, width, height; x and y default to 0, width and height to the rest "+
			"of the screen) must lie on the screen, else 400 OFF_SCREEN with the bounds. scale (0,1] shrinks with an "+
			"area filter (coverage-weighted mean, alias-free). cursor=true draws the pointer in. Headers X-Image-Width and "+
			"X-Image-Height give the size.", platform.Op(s.Screenshot))
	shot.ContentType = "image/png"
	scaled := core.Route(http.MethodGet, "/screenshots/scaled", "takeScaledScreenshot", "Screenshot scaled to a width",
		"The whole screen as PNG (base64 in image), shrunk with the area filter of GET screenshots to at most max_width "+
			"pixels wide (default 1280; unscaled when the screen is narrower), with the image's and the screen's sizes and "+
			"scale, image pixels per screen pixel. Positions for the mouse and input routes are screen pixels: an image "+
			"position times screen_width/width.", platform.Op(s.ScaledScreenshot))
	scaled.Tool = &platform.Tool{Name: "display_screenshot", Title: "Screenshot",
		Description: "Take a screenshot of the container's X display, answered as a PNG image scaled to at most max_width " +
			"pixels wide. Coordinates for display_click and the others are screen pixels: scale image positions by " +
			"screen_width/width.",
		Image: "image", ReadOnly: true, Idempotent: true,
		Text: "screenshot {{.width}}x{{.height}} of a {{.screen_width}}x{{.screen_height}} screen"}
	return []platform.Route{
		core.Route(http.MethodGet, "/info", "getScreenInfo", "Screen size and monitors", "width and height of the root window and each monitor "+
			"(Xinerama heads, else RandR outputs, else the one screen).", platform.ReadOp(s.ScreenInfo)),
		shot,
		scaled,
	}
}
