package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
)

const maxClipboard = 16 << 20

// Describe answers the service's index: its display, whether it is
// available, the screen size and every path it serves.
func (s *Service) Describe(context.Context) (Index, error) {
	idx := Index{Service: "display", Endpoints: []IndexEndpoint{}}
	for _, r := range s.Routes() {
		idx.Endpoints = append(idx.Endpoints, IndexEndpoint{Method: r.Method, Path: r.Path, Summary: r.Summary})
	}
	d := s.Driver()
	if d == nil {
		idx.Reason = *s.reason.Load()
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

// read is a query of the driver, 503 when there is none.
func read[T any](s *Service, fetch func(Driver) (T, error)) (T, error) {
	d, err := s.driver()
	if err != nil {
		var zero T
		return zero, err
	}
	return fetch(d)
}

// WindowPath names a window in the path.
type WindowPath struct {
	WindowID string `path:"windowId" doc:"an X11 window id, decimal or 0x-hex"`
}

// ValidateParams checks the window id's syntax.
func (r WindowPath) ValidateParams() error {
	_, err := ParseWindowID("windowId", r.WindowID)
	return err
}

func (r WindowPath) id() uint32 {
	id, _ := ParseWindowID("windowId", r.WindowID) // checked by ValidateParams
	return id
}

// ScreenInfo answers the screen's size and monitors.
func (s *Service) ScreenInfo(context.Context) (Info, error) { return read(s, Driver.Info) }

// DisplayGeometry answers the root window's size.
func (s *Service) DisplayGeometry(context.Context) (Geometry, error) {
	return read(s, func(d Driver) (Geometry, error) {
		b, err := bounds(d)
		return Geometry{X: b.X, Y: b.Y, Width: b.Width, Height: b.Height}, err
	})
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
func (q ScreenshotQuery) Options(screen Rect) (ScreenshotOptions, error) {
	o := ScreenshotOptions{Format: q.Format, Quality: q.Quality, Scale: q.Scale, Cursor: q.Cursor}
	if o.Format == "jpg" {
		o.Format = "jpeg"
	}
	r := Rect{X: q.X, Y: q.Y}
	if err := onScreen("x", "y", Point{r.X, r.Y}, screen); err != nil {
		return o, err
	}
	r.Width, r.Height = screen.Width-r.X, screen.Height-r.Y
	if q.Width != nil {
		r.Width = *q.Width
	}
	if q.Height != nil {
		r.Height = *q.Height
	}
	if err := regionOnScreen("", r, screen); err != nil {
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
	d, err := s.driver()
	if err != nil {
		return Image{}, err
	}
	b, err := bounds(d)
	if err != nil {
		return Image{}, err
	}
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

// MouseLocation answers where the pointer is.
func (s *Service) MouseLocation(context.Context) (Point, error) { return read(s, Driver.Pointer) }

// Windows answers the managed top-level windows.
func (s *Service) Windows(context.Context) ([]Window, error) {
	return read(s, func(d Driver) ([]Window, error) {
		ws, err := d.Windows()
		if ws == nil {
			ws = []Window{}
		}
		return ws, err
	})
}

// ActiveWindow answers the active window.
func (s *Service) ActiveWindow(context.Context) (Window, error) { return read(s, Driver.ActiveWindow) }

// ParseWindowID reads a window id: decimal or 0x-hex.
func ParseWindowID(field, v string) (uint32, error) {
	base, digits := 10, v
	if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0X") {
		base, digits = 16, v[2:]
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil || n == 0 {
		return 0, fault.Invalid(field, "must be a window id (decimal or 0x-hex), got %q", v)
	}
	return uint32(n), nil
}

// WindowProperties answers everything known about a window.
func (s *Service) WindowProperties(_ context.Context, in WindowPath) (WindowProperties, error) {
	return read(s, func(d Driver) (WindowProperties, error) { return d.WindowProperties(in.id()) })
}

// WindowGeometry answers a window's position and size.
func (s *Service) WindowGeometry(_ context.Context, in WindowPath) (Geometry, error) {
	return read(s, func(d Driver) (Geometry, error) {
		w, err := d.Window(in.id())
		return Geometry{ID: w.ID, X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}, err
	})
}

// WindowName answers a window's title.
func (s *Service) WindowName(_ context.Context, in WindowPath) (WindowName, error) {
	return read(s, func(d Driver) (WindowName, error) {
		w, err := d.Window(in.id())
		return WindowName{ID: w.ID, Name: w.Name}, err
	})
}

// SearchWindows answers the windows matching the search.
func (s *Service) SearchWindows(_ context.Context, in WindowSearch) ([]Window, error) {
	d, err := s.driver()
	if err != nil {
		return nil, err
	}
	ws, err := d.Windows()
	if err != nil {
		return nil, err
	}
	out := []Window{}
	for _, win := range ws {
		if in.match.matches(d, win) {
			out = append(out, win)
		}
	}
	return out, nil
}

// ClipboardQuery selects what GET clipboard reads.
type ClipboardQuery struct {
	Format    string `query:"format" enum:"text,png,image" default:"text" doc:"png or image: see clipboard/image (303)"`
	Selection string `query:"selection" enum:"clipboard,primary" default:"clipboard"`
	Targets   bool   `query:"targets" default:"false" doc:"also list the offered formats"`
}

// ClipboardAnswer is GET clipboard's answer: the view, or for format=png a
// 303 to clipboard/image.
type ClipboardAnswer struct {
	Body     ClipboardView
	Status   int
	Location string `header:"Location" doc:"format=png or image: where the image is"`
}

// ClipboardImage is the image a selection holds, with its own type.
type ClipboardImage struct {
	Body         []byte
	ContentType  string `header:"Content-Type"`
	CacheControl string `header:"Cache-Control"`
}

// SelectionQuery names a selection.
type SelectionQuery struct {
	Selection string `query:"selection" enum:"clipboard,primary" default:"clipboard"`
}

func (s *Service) selection(ctx context.Context, name string) (Clipboard, error) {
	d, err := s.driver()
	if err != nil {
		return Clipboard{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return d.Selection(ctx, strings.ToUpper(name))
}

// ClipboardGet answers the selection's text, whether it holds an image and
// (targets) what it offers.
func (s *Service) ClipboardGet(ctx context.Context, q ClipboardQuery) (ClipboardAnswer, error) {
	clip, err := s.selection(ctx, q.Selection)
	if err != nil {
		return ClipboardAnswer{}, err
	}
	view := ClipboardView{Text: clip.Text, HasImage: len(clip.Image) > 0}
	if q.Targets {
		view.Targets = clip.Targets
		if view.Targets == nil {
			view.Targets = []string{}
		}
	}
	out := ClipboardAnswer{Body: view}
	if q.Format != "text" {
		out.Status = http.StatusSeeOther
		out.Location = prefix + "/clipboard/image?selection=" + q.Selection
	}
	return out, nil
}

// ClipboardImage answers the image the selection holds, 404 when it holds
// none.
func (s *Service) ClipboardImage(ctx context.Context, q SelectionQuery) (ClipboardImage, error) {
	clip, err := s.selection(ctx, q.Selection)
	if err != nil {
		return ClipboardImage{}, err
	}
	if len(clip.Image) == 0 {
		return ClipboardImage{}, &fault.Error{Code: fault.CodeNotFound, Message: "the clipboard holds no image", Details: "clipboard"}
	}
	return ClipboardImage{Body: clip.Image, ContentType: clip.MIME, CacheControl: "no-store"}, nil
}
