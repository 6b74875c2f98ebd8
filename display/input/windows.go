package input

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

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

// DisplayGeometry answers the root window's size.
func (s *Service) DisplayGeometry(context.Context) (Geometry, error) {
	return core.Read(s.desk, func(d desktop.Driver) (Geometry, error) {
		b, err := core.Bounds(d)
		return Geometry{X: b.X, Y: b.Y, Width: b.Width, Height: b.Height}, err
	})
}

// MouseLocation answers where the pointer is.
func (s *Service) MouseLocation(context.Context) (desktop.Point, error) {
	return core.Read(s.desk, desktop.Driver.Pointer)
}

// Windows answers the managed top-level windows.
func (s *Service) Windows(context.Context) ([]desktop.Window, error) {
	return core.Read(s.desk, func(d desktop.Driver) ([]desktop.Window, error) {
		ws, err := d.Windows()
		if ws == nil {
			ws = []desktop.Window{}
		}
		return ws, err
	})
}

// ActiveWindow answers the active window.
func (s *Service) ActiveWindow(context.Context) (desktop.Window, error) {
	return core.Read(s.desk, desktop.Driver.ActiveWindow)
}

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
func (s *Service) WindowProperties(_ context.Context, in WindowPath) (desktop.WindowProperties, error) {
	return core.Read(s.desk, func(d desktop.Driver) (desktop.WindowProperties, error) { return d.WindowProperties(in.id()) })
}

// WindowGeometry answers a window's position and size.
func (s *Service) WindowGeometry(_ context.Context, in WindowPath) (Geometry, error) {
	return core.Read(s.desk, func(d desktop.Driver) (Geometry, error) {
		w, err := d.Window(in.id())
		return Geometry{ID: w.ID, X: w.X, Y: w.Y, Width: w.Width, Height: w.Height}, err
	})
}

// WindowName answers a window's title.
func (s *Service) WindowName(_ context.Context, in WindowPath) (WindowName, error) {
	return core.Read(s.desk, func(d desktop.Driver) (WindowName, error) {
		w, err := d.Window(in.id())
		return WindowName{ID: w.ID, Name: w.Name}, err
	})
}

// SearchWindows answers the windows matching the search.
func (s *Service) SearchWindows(_ context.Context, in WindowSearch) ([]desktop.Window, error) {
	d, err := s.desk.Current()
	if err != nil {
		return nil, err
	}
	ws, err := d.Windows()
	if err != nil {
		return nil, err
	}
	out := []desktop.Window{}
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

func (s *Service) selection(ctx context.Context, name string) (desktop.Clipboard, error) {
	d, err := s.desk.Current()
	if err != nil {
		return desktop.Clipboard{}, err
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
		out.Location = core.Prefix + "/clipboard/image?selection=" + q.Selection
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
