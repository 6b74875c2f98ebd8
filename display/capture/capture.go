package capture

import (
	"context"
	"time"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// ScreenInfo answers the screen's size and monitors.
func (s *Service) ScreenInfo(context.Context) (desktop.Info, error) {
	return core.Read(s.desk, desktop.Driver.Info)
}

// bigCoord bounds screenshot coordinates before they meet the screen: far
// beyond any X screen, small enough that no arithmetic on them overflows.
const bigCoord = 1 << 20

// ScreenshotQuery is the screenshot's query; the binder checks the grammar
// and ranges, Options checks it against the screen.
type ScreenshotQuery struct {
	Format  string  `query:"format" enum:"png,jpeg,jpg" default:"png" doc:"png (default), jpeg or jpg (the same)"`
	Quality int     `query:"quality" minimum:"1" maximum:"100" default:"80" doc:"JPEG quality"`
	X       int     `query:"x" minimum:"-1048576" maximum:"1048576" doc:"left edge of the region, default 0; must be on the screen"`
	Y       int     `query:"y" minimum:"-1048576" maximum:"1048576" doc:"top edge of the region, default 0; must be on the screen"`
	Width   *int    `query:"width" minimum:"1" maximum:"1048576" doc:"default: the rest of the screen"`
	Height  *int    `query:"height" minimum:"1" maximum:"1048576" doc:"default: the rest of the screen"`
	Scale   float64 `query:"scale" exclusiveMinimum:"0" maximum:"1" default:"1" doc:"shrink factor"`
	Cursor  bool    `query:"cursor" default:"false" doc:"draw the mouse pointer"`
}

// Options turns the query into options; screen is the root window, which
// the region must lie on.
func (q ScreenshotQuery) Options(screen desktop.Rect) (desktop.ScreenshotOptions, error) {
	o := desktop.ScreenshotOptions{Format: q.Format, Quality: q.Quality, Scale: q.Scale, Cursor: q.Cursor}
	if o.Format == "jpg" {
		o.Format = "jpeg"
	}
	r := desktop.Rect{X: q.X, Y: q.Y}
	if err := core.OnScreen("x", "y", desktop.Point{X: r.X, Y: r.Y}, screen); err != nil {
		return o, err
	}
	r.Width, r.Height = screen.Width-r.X, screen.Height-r.Y
	if q.Width != nil {
		r.Width = *q.Width
	}
	if q.Height != nil {
		r.Height = *q.Height
	}
	if err := core.RegionOnScreen("", r, screen); err != nil {
		return o, err
	}
	o.Region = r
	if int(float64(r.Width)*o.Scale) < 1 || int(float64(r.Height)*o.Scale) < 1 {
		return o, fault.Invalid("scale", "leaves an image smaller than 1 pixel")
	}
	return o, nil
}

// Image is an encoded image answer.
type Image struct {
	Body         []byte
	ContentType  string `header:"Content-Type"`
	Width        int    `header:"X-Image-Width" doc:"the image's width in pixels"`
	Height       int    `header:"X-Image-Height" doc:"the image's height in pixels"`
	CacheControl string `header:"Cache-Control"`
}

// Screenshot answers the screen, or a region of it, as PNG or JPEG.
func (s *Service) Screenshot(ctx context.Context, q ScreenshotQuery) (Image, error) {
	d, b, err := s.screen()
	if err != nil {
		return Image{}, err
	}
	return shoot(ctx, d, b, q)
}

// screen is the display's driver and its root window.
func (s *Service) screen() (desktop.Driver, desktop.Rect, error) {
	d, err := s.desk.Current()
	if err != nil {
		return nil, desktop.Rect{}, err
	}
	b, err := core.Bounds(d)
	return d, b, err
}

// shoot takes q's screenshot on d, whose root window is b.
func shoot(ctx context.Context, d desktop.Driver, b desktop.Rect, q ScreenshotQuery) (Image, error) {
	o, err := q.Options(b)
	if err != nil {
		return Image{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	img, err := d.Screenshot(ctx, o)
	if err != nil {
		return Image{}, err
	}
	w, h := o.Region.Width, o.Region.Height
	if o.Scale < 1 {
		w, h = int(float64(w)*o.Scale), int(float64(h)*o.Scale)
	}
	return Image{Body: img, ContentType: "image/" + o.Format, Width: w, Height: h, CacheControl: "no-store"}, nil
}
