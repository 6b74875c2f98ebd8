package capture

import (
	"context"
	"math"

	"deckhand/platform/fault"
)

// ScaledQuery bounds a scaled screenshot's width.
type ScaledQuery struct {
	MaxWidth int `query:"max_width" minimum:"1" default:"1280" doc:"scale the image down to at most this many pixels wide (the screen's own size when narrower)"`
}

// ScaledScreenshot answers GET .../screenshots/scaled. Image is the first
// member: the MCP service cuts a leading image out of the JSON without
// decoding the rest.
type ScaledScreenshot struct {
	Image        []byte  `json:"image" required:"true" doc:"the screen as PNG, base64 (the display_screenshot tool answers it as image content instead)"`
	Width        int     `json:"width" required:"true" doc:"the image's width in pixels"`
	Height       int     `json:"height" required:"true" doc:"the image's height in pixels"`
	ScreenWidth  int     `json:"screen_width" required:"true" doc:"the screen's width in pixels: click coordinates are screen pixels, so multiply image x by screen_width/width"`
	ScreenHeight int     `json:"screen_height" required:"true" doc:"the screen's height in pixels: multiply image y by screen_height/height"`
	Scale        float64 `json:"scale" required:"true" doc:"image pixels per screen pixel (1: unscaled)"`
}

// ScaledScreenshot answers the whole screen as PNG at most q.MaxWidth
// wide, with the sizes a model needs to turn image positions into screen
// ones: the screen is read once, so the sizes are those of the image.
func (s *Service) ScaledScreenshot(ctx context.Context, q ScaledQuery) (ScaledScreenshot, error) {
	d, b, err := s.screen()
	if err != nil {
		return ScaledScreenshot{}, err
	}
	scale := fitScale(b.Width, q.MaxWidth)
	if int(float64(b.Height)*scale) < 1 {
		return ScaledScreenshot{}, fault.Invalid("max_width", "leaves an image less than 1 pixel high of the %dx%d screen", b.Width, b.Height)
	}
	img, err := shoot(ctx, d, b, ScreenshotQuery{Format: "png", Quality: 80, Scale: scale})
	if err != nil {
		return ScaledScreenshot{}, err
	}
	return ScaledScreenshot{Image: img.Body, Width: img.Width, Height: img.Height, ScreenWidth: b.Width, ScreenHeight: b.Height,
		Scale: scale}, nil
}

// fitScale is the scale that makes width pixels at most max wide: 1 when
// they fit, else max/width nudged up until width times it truncates to
// max (the scaler truncates, and the quotient's rounding may fall short).
func fitScale(width, max int) float64 {
	if width <= max {
		return 1
	}
	s := float64(max) / float64(width)
	for int(float64(width)*s) < max {
		s = math.Nextafter(s, 1)
	}
	return s
}
