package desktop

import (
	"context"
	"fmt"
	"net/http"

	"deckhand/platform/fault"
)

// CodeDisplayUnavailable: there is no X display to drive.
const CodeDisplayUnavailable = "DISPLAY_UNAVAILABLE"

func init() {
	fault.RegisterCode(CodeDisplayUnavailable, http.StatusServiceUnavailable)
}

// Keysym is an X11 keysym value. The key table in keys.go resolves client key
// names to keysyms without the driver, so a batch can be validated
// entirely before any step runs.
type Keysym uint32

// Button is a pointer button: 1 left, 2 middle, 3 right, 4-7 wheel.
type Button uint8

const (
	ButtonLeft       Button = 1
	ButtonMiddle     Button = 2
	ButtonRight      Button = 3
	ButtonWheelUp    Button = 4
	ButtonWheelDown  Button = 5
	ButtonWheelLeft  Button = 6
	ButtonWheelRight Button = 7
)

func (b Button) String() string {
	switch b {
	case ButtonLeft:
		return "left"
	case ButtonMiddle:
		return "middle"
	case ButtonRight:
		return "right"
	case ButtonWheelUp:
		return "wheel-up"
	case ButtonWheelDown:
		return "wheel-down"
	case ButtonWheelLeft:
		return "wheel-left"
	case ButtonWheelRight:
		return "wheel-right"
	}
	return fmt.Sprintf("button%d", b)
}

// Point is a position on the root window (all screens together).
type Point struct {
	X int `json:"x" required:"true"`
	Y int `json:"y" required:"true"`
}

// Rect is a region of the root window.
type Rect struct {
	X      int `json:"x" required:"true"`
	Y      int `json:"y" required:"true"`
	Width  int `json:"width" required:"true"`
	Height int `json:"height" required:"true"`
}

// Contains reports whether p lies inside r.
func (r Rect) Contains(p Point) bool {
	return p.X >= r.X && p.Y >= r.Y && p.X < r.X+r.Width && p.Y < r.Y+r.Height
}

// Screen is one monitor (Xinerama head or RandR CRTC) inside the root window.
type Screen struct {
	Index  int `json:"index" required:"true"`
	X      int `json:"x" required:"true"`
	Y      int `json:"y" required:"true"`
	Width  int `json:"width" required:"true"`
	Height int `json:"height" required:"true"`
}

// Info is the answer of GET /api/v1/display/info.
type Info struct {
	Width    int      `json:"width" required:"true" doc:"root window width: all screens together"`
	Height   int      `json:"height" required:"true"`
	Displays []Screen `json:"displays" required:"true"`
}

// ScreenshotOptions is a validated screenshot request. Region is always set
// (the whole root window when the client gave none).
type ScreenshotOptions struct {
	Format  string // "png" or "jpeg"
	Quality int    // 1-100 (jpeg); png maps it to compression effort
	Region  Rect
	Scale   float64 // (0,1]
	Cursor  bool
}

// Window is one top-level window as clients see it. X and Y are the
// position of the window's own (client) area on the root window, as
// `xdotool getwindowgeometry` reports it; Width and Height are its size.
type Window struct {
	ID     uint32 `json:"id" required:"true"`
	Name   string `json:"name" required:"true"`
	PID    int    `json:"pid" required:"true" doc:"_NET_WM_PID, 0 when the client does not set it"`
	X      int    `json:"x" required:"true"`
	Y      int    `json:"y" required:"true"`
	Width  int    `json:"width" required:"true"`
	Height int    `json:"height" required:"true"`
	Active bool   `json:"active" required:"true"`
}

// Extents are the window manager's decorations around a window.
type Extents struct {
	Left   int `json:"left"`
	Right  int `json:"right"`
	Top    int `json:"top"`
	Bottom int `json:"bottom"`
}

// WindowProperties is the detailed view of one window.
type WindowProperties struct {
	Window
	Class        string   `json:"class" doc:"WM_CLASS class part"`
	Instance     string   `json:"instance" doc:"WM_CLASS instance part"`
	Role         string   `json:"role,omitempty"`
	ProcessName  string   `json:"process_name,omitempty" doc:"from /proc/<pid>/comm when the process is local"`
	Command      []string `json:"command,omitempty" doc:"from /proc/<pid>/cmdline when the process is local"`
	Mapped       bool     `json:"mapped"`
	Minimized    bool     `json:"minimized"`
	Maximized    bool     `json:"maximized"`
	Fullscreen   bool     `json:"fullscreen"`
	Desktop      int      `json:"desktop" doc:"_NET_WM_DESKTOP, -1 when unset or on all desktops"`
	States       []string `json:"states" doc:"_NET_WM_STATE atoms"`
	Types        []string `json:"types" doc:"_NET_WM_WINDOW_TYPE atoms"`
	FrameExtents Extents  `json:"frame_extents" doc:"_NET_FRAME_EXTENTS (decorations)"`
	Transient    uint32   `json:"transient_for,omitempty"`
}

// Clipboard is what a selection holds.
type Clipboard struct {
	Text    string   // UTF-8 text, "" when none
	Image   []byte   // image bytes when the owner offers an image target
	MIME    string   // the image's type (image/png ...)
	Targets []string // what the owner offers
}

// Driver is the desktop behind the service. display/x11 implements it on a
// real X server; the service never talks to X itself. Implementations are
// safe for concurrent use; the service still serialises input so one batch
// is never interleaved with another client's clicks.
type Driver interface {
	// Display names the display (":99").
	Display() string
	Info() (Info, error)
	// Screenshot returns the encoded image.
	Screenshot(ctx context.Context, o ScreenshotOptions) ([]byte, error)
	// Checksum fingerprints the pixels of a region (wait for a change).
	Checksum(r Rect) (uint64, error)

	Pointer() (Point, error)
	// UnderPointer is the top-level window (a window manager's frame, or
	// an unmanaged window) under the pointer, 0 over the bare desktop.
	UnderPointer() (uint32, error)
	// MoveTo moves the pointer. Input methods may return before the server
	// acted (a later Pointer still sees the effect); Sync waits for it.
	MoveTo(p Point) error
	Button(b Button, down bool) error
	// Key presses or releases the key producing sym, binding a spare
	// keycode when no key of the keyboard map produces it.
	Key(sym Keysym, down bool) error
	// TypeRune presses and releases what produces r (with Shift when the
	// keymap needs it).
	TypeRune(r rune) error
	// Sync returns once the server has processed all input sent so far.
	Sync() error
	// ReleaseAll releases every key and button the server reports down.
	ReleaseAll() (keys []Keysym, buttons []Button, err error)

	Windows() ([]Window, error)
	// Window answers fault.NotFound for an id that is not a window.
	Window(id uint32) (Window, error)
	ActiveWindow() (Window, error)
	WindowProperties(id uint32) (WindowProperties, error)
	Focus(id uint32) error
	Raise(id uint32) error
	Minimize(id uint32) error
	CloseWindow(id uint32) error
	// Move places the window's client area at p and returns its new state.
	Move(id uint32, p Point) (Window, error)
	Resize(id uint32, width, height int) (Window, error)

	// Selection reads a selection ("CLIPBOARD" or "PRIMARY").
	Selection(ctx context.Context, name string) (Clipboard, error)
	// SetClipboard takes ownership of CLIPBOARD with text or an image.
	SetClipboard(c Clipboard) error

	Close() error
}
