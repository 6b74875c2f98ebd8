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

// ParseScreenshot turns the screenshot query into options; screen is the
// root window.
func ParseScreenshot(q func(string) string, screen Rect) (ScreenshotOptions, error) {
	o := ScreenshotOptions{Format: "png", Quality: 80, Scale: 1}
	switch strings.ToLower(q("format")) {
	case "", "png":
	case "jpeg", "jpg":
		o.Format = "jpeg"
	default:
		return o, platform.Invalid("format", "must be png or jpeg, got %q", q("format"))
	}
	intParam := func(name string, def, lo, hi int) (int, error) {
		v := q(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, platform.Invalid(name, "must be an integer, got %q", v)
		}
		if n < lo || n > hi {
			return 0, platform.Invalid(name, "must be between %d and %d, got %d", lo, hi, n)
		}
		return n, nil
	}
	var err error
	if o.Quality, err = intParam("quality", 80, 1, 100); err != nil {
		return o, err
	}
	const big = 1 << 20
	r := Rect{}
	if r.X, err = intParam("x", 0, -big, big); err != nil {
		return o, err
	}
	if r.Y, err = intParam("y", 0, -big, big); err != nil {
		return o, err
	}
	if err := onScreen("x", "y", Point{r.X, r.Y}, screen); err != nil {
		return o, err
	}
	if r.Width, err = intParam("width", screen.Width-r.X, 1, big); err != nil {
		return o, err
	}
	if r.Height, err = intParam("height", screen.Height-r.Y, 1, big); err != nil {
		return o, err
	}
	if err := regionOnScreen("", r, screen); err != nil {
		return o, err
	}
	o.Region = r
	if v := q("scale"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return o, platform.Invalid("scale", "must be a number, got %q", v)
		}
		if !(f > 0 && f <= 1) {
			return o, platform.Invalid("scale", "must be in (0,1], got %s", v)
		}
		if int(float64(r.Width)*f) < 1 || int(float64(r.Height)*f) < 1 {
			return o, platform.Invalid("scale", "leaves an image smaller than 1 pixel")
		}
		o.Scale = f
	}
	switch strings.ToLower(q("cursor")) {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		o.Cursor = true
	default:
		return o, platform.Invalid("cursor", "must be true or false, got %q", q("cursor"))
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
	o, err := ParseScreenshot(func(k string) string { return c.Query(k) }, b)
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
	sel := "CLIPBOARD"
	switch strings.ToLower(c.Query("selection")) {
	case "", "clipboard":
	case "primary":
		sel = "PRIMARY"
	default:
		return platform.Invalid("selection", "must be clipboard or primary")
	}
	format := strings.ToLower(c.Query("format"))
	if format != "" && format != "text" && format != "png" && format != "image" {
		return platform.Invalid("format", "must be text, png or image")
	}
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
	if c.Query("targets") == "true" {
		view.Targets = clip.Targets
		if view.Targets == nil {
			view.Targets = []string{}
		}
	}
	return platform.JSON(c, 200, view)
}
