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

func (s *Service) index(c fiber.Ctx) error {
	idx := Index{Service: "display", Endpoints: []IndexEndpoint{}}
	for _, r := range s.Routes() {
		idx.Endpoints = append(idx.Endpoints, IndexEndpoint{Method: r.Method, Path: r.Path, Summary: r.Summary})
	}
	d := s.Driver()
	if d == nil {
		idx.Reason = *s.reason.Load()
		return platform.JSON(c, 200, idx)
	}
	idx.Display = d.Display()
	info, err := d.Info()
	if err != nil {
		return err
	}
	idx.Available = true
	idx.Width, idx.Height, idx.Screens = info.Width, info.Height, len(info.Displays)
	return platform.JSON(c, 200, idx)
}

// read answers, as JSON, what fetch reads through the driver: the shape of
// every GET that is one driver query.
func read[T any](c fiber.Ctx, s *Service, fetch func(Driver) (T, error)) error {
	d, err := s.driver()
	if err != nil {
		return err
	}
	v, err := fetch(d)
	if err != nil {
		return err
	}
	return platform.JSON(c, 200, v)
}

// readWindow is read for the paths under /window/{windowId}.
func readWindow[T any](c fiber.Ctx, s *Service, fetch func(Driver, uint32) (T, error)) error {
	return read(c, s, func(d Driver) (T, error) {
		id, err := ParseWindowID("windowId", c.Params("windowId"))
		if err != nil {
			var zero T
			return zero, err
		}
		return fetch(d, id)
	})
}

// decode is the start of every handler with a body: the display first (503
// when there is none), then the strictly decoded and validated body.
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

func (s *Service) info(c fiber.Ctx) error {
	return read(c, s, Driver.Info)
}

func (s *Service) displayGeometry(c fiber.Ctx) error {
	return read(c, s, func(d Driver) (Geometry, error) {
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

func (s *Service) mouseLocation(c fiber.Ctx) error {
	return read(c, s, Driver.Pointer)
}

func (s *Service) windows(c fiber.Ctx) error {
	return read(c, s, func(d Driver) ([]Window, error) {
		ws, err := d.Windows()
		if ws == nil {
			ws = []Window{}
		}
		return ws, err
	})
}

func (s *Service) activeWindow(c fiber.Ctx) error {
	return read(c, s, Driver.ActiveWindow)
}

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

func (s *Service) windowProperties(c fiber.Ctx) error {
	return readWindow(c, s, Driver.WindowProperties)
}

func (s *Service) windowGeometry(c fiber.Ctx) error {
	return readWindow(c, s, func(d Driver, id uint32) (Geometry, error) {
		w, err := d.Window(id)
		return Geometry{ID: w.ID, X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}, err
	})
}

func (s *Service) windowName(c fiber.Ctx) error {
	return readWindow(c, s, func(d Driver, id uint32) (WindowName, error) {
		w, err := d.Window(id)
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
