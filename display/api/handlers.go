package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
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

func (s *Service) decode(c fiber.Ctx, body any) (Driver, error) {
	d, err := s.driver()
	if err != nil {
		return nil, err
	}
	if err := platform.Decode(c, body); err != nil {
		return nil, err
	}
	return d, nil
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

// ScreenshotQuery declares the screenshot's query parameters; the host
// parses and checks them (format, ranges, the boolean grammar) before the
// handler, which only checks them against the screen (ParseScreenshot).
var ScreenshotQuery = []platform.Param{
	{Name: "format", Enum: []string{"png", "jpeg", "jpg"}, Default: "png", Description: "png (default), jpeg or jpg (the same)"},
	{Name: "quality", Type: "integer", Range: &platform.Range{Min: 1, Max: 100}, Default: "80", Description: "JPEG quality"},
	{Name: "x", Type: "integer", Range: &platform.Range{Min: -bigCoord, Max: bigCoord}, Description: "left edge of the region, default 0; must be on the screen"},
	{Name: "y", Type: "integer", Range: &platform.Range{Min: -bigCoord, Max: bigCoord}, Description: "top edge of the region, default 0; must be on the screen"},
	{Name: "width", Type: "integer", Range: &platform.Range{Min: 1, Max: bigCoord}, Description: "default: the rest of the screen"},
	{Name: "height", Type: "integer", Range: &platform.Range{Min: 1, Max: bigCoord}, Description: "default: the rest of the screen"},
	{Name: "scale", Type: "number", Range: &platform.Range{Min: 0, ExclusiveMin: true, Max: 1}, Default: "1", Description: "shrink factor"},
	{Name: "cursor", Type: "boolean", Default: "false", Description: "draw the mouse pointer"},
}

// ParseScreenshot turns the parsed screenshot query (ScreenshotQuery)
// into options; screen is the root window, which the region must lie on.
func ParseScreenshot(q platform.Query, screen Rect) (ScreenshotOptions, error) {
	o := ScreenshotOptions{Format: q.String("format"), Quality: int(q.Int("quality")), Scale: q.Float("scale"), Cursor: q.Bool("cursor")}
	if o.Format == "jpg" {
		o.Format = "jpeg"
	}
	r := Rect{X: int(q.Int("x")), Y: int(q.Int("y"))}
	if err := onScreen("x", "y", Point{r.X, r.Y}, screen); err != nil {
		return o, err
	}
	r.Width, r.Height = screen.Width-r.X, screen.Height-r.Y
	if q.Has("width") {
		r.Width = int(q.Int("width"))
	}
	if q.Has("height") {
		r.Height = int(q.Int("height"))
	}
	if err := regionOnScreen("", r, screen); err != nil {
		return o, err
	}
	o.Region = r
	if int(float64(r.Width)*o.Scale) < 1 || int(float64(r.Height)*o.Scale) < 1 {
		return o, platform.Invalid("scale", "leaves an image smaller than 1 pixel")
	}
	return o, nil
}

func (s *Service) screenshot(c fiber.Ctx) error {
	d, err := s.driver()
	if err != nil {
		return err
	}
	b, err := bounds(d)
	if err != nil {
		return err
	}
	o, err := ParseScreenshot(platform.QueryOf(c), b)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context(), 30*time.Second)
	defer cancel()
	img, err := d.Screenshot(ctx, o)
	if err != nil {
		return err
	}
	w, h := o.Region.Width, o.Region.Height
	if o.Scale < 1 {
		w, h = int(float64(w)*o.Scale), int(float64(h)*o.Scale)
	}
	c.Set("X-Image-Width", strconv.Itoa(w))
	c.Set("X-Image-Height", strconv.Itoa(h))
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "image/"+o.Format)
	return c.Status(http.StatusOK).Send(img)
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
		return 0, platform.Invalid(field, "must be a window id (decimal or 0x-hex), got %q", v)
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

func (s *Service) windowSearch(c fiber.Ctx) error {
	var req WindowSearch
	d, err := s.decode(c, &req)
	if err != nil {
		return err
	}
	ws, err := d.Windows()
	if err != nil {
		return err
	}
	out := []Window{}
	for _, win := range ws {
		if req.match.matches(d, win) {
			out = append(out, win)
		}
	}
	return platform.JSON(c, 200, out)
}

func (s *Service) clipboardGet(c fiber.Ctx) error {
	d, err := s.driver()
	if err != nil {
		return err
	}
	q := platform.QueryOf(c)
	sel, format := strings.ToUpper(q.String("selection")), q.String("format")
	ctx, cancel := context.WithTimeout(c.Context(), 3*time.Second)
	defer cancel()
	clip, err := d.Selection(ctx, sel)
	if err != nil {
		return err
	}
	if format == "png" || format == "image" {
		if len(clip.Image) == 0 {
			return &platform.Error{Code: platform.CodeNotFound, Message: "the clipboard holds no image", Details: "clipboard"}
		}
		c.Set(fiber.HeaderContentType, clip.MIME)
		return c.Status(200).Send(clip.Image)
	}
	view := ClipboardView{Text: clip.Text, HasImage: len(clip.Image) > 0}
	if q.Bool("targets") {
		view.Targets = clip.Targets
		if view.Targets == nil {
			view.Targets = []string{}
		}
	}
	return platform.JSON(c, 200, view)
}
