package capture

import (
	"context"
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// ScaledQuery is GET .../screenshots/scaled.
type ScaledQuery struct {
	MaxWidth int `query:"max_width" minimum:"0" maximum:"1048576" default:"1280" doc:"scale the image down to at most this many pixels wide (0: 1280; the screen's own width when smaller)"`
}

// Scaled is a whole-screen PNG scaled to a width, with the sizes a
// reader needs to turn image positions into screen positions.
type Scaled struct {
	Image        []byte  `json:"image,omitempty" doc:"the PNG, base64 (the display_screenshot tool answers it as image content instead)"`
	Width        int     `json:"width" required:"true" doc:"the image's width in pixels"`
	Height       int     `json:"height" required:"true" doc:"the image's height in pixels"`
	ScreenWidth  int     `json:"screen_width" required:"true" doc:"the screen's width: click coordinates are screen pixels, so multiply image x by screen_width/width"`
	ScreenHeight int     `json:"screen_height" required:"true"`
	Scale        float64 `json:"scale" required:"true" doc:"image pixels per screen pixel"`
}

// scaledRoute is GET .../screenshots/scaled, the display_screenshot tool.
func (s *Service) scaledRoute() platform.Route {
	r := core.Route(http.MethodGet, "/screenshots/scaled", "takeScaledScreenshot", "Screenshot scaled to a width, as JSON",
		"The whole screen as PNG (base64 in image), shrunk with the screenshot's area filter to at most max_width "+
			"pixels wide, with the image's and the screen's sizes.", platform.Op(s.ScaledScreenshot))
	r.Tool = &platform.Tool{Name: "display_screenshot", Title: "Screenshot",
		Description: "Take a screenshot of the container's X display, answered as a PNG image scaled to at most max_width " +
			"pixels wide. Coordinates for display_click and the others are screen pixels: scale image positions by " +
			"screen_width/width.",
		ReadOnly: true}
	return r
}

// ScaledScreenshot answers the screen as PNG at most max_width wide.
func (s *Service) ScaledScreenshot(ctx context.Context, q ScaledQuery) (Scaled, error) {
	d, err := s.desk.Current()
	if err != nil {
		return Scaled{}, err
	}
	b, err := core.Bounds(d)
	if err != nil {
		return Scaled{}, err
	}
	maxW, scale := q.MaxWidth, 1.0
	if maxW <= 0 {
		maxW = 1280
	}
	if b.Width > maxW {
		scale = float64(maxW) / float64(b.Width)
	}
	img, err := s.shoot(ctx, d, b, ScreenshotQuery{Format: "png", Quality: 80, Scale: scale})
	if err != nil {
		return Scaled{}, err
	}
	return Scaled{Image: img.Body, Width: img.Width, Height: img.Height, ScreenWidth: b.Width, ScreenHeight: b.Height, Scale: scale}, nil
}
