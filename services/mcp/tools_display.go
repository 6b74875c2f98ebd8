package mcp

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png" // screenshot sizes
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/display/api"
)

const displayPrefix = "/api/v1/display"

// maxScreenshot bounds a screenshot's PNG.
const maxScreenshot = 64 << 20

// ScreenshotArgs are display_screenshot's arguments.
type ScreenshotArgs struct {
	MaxWidth int `json:"max_width,omitempty" jsonschema:"scale the image down to at most this many pixels wide (default 1280; the screen's own size when smaller)"`
}

// ScreenshotResult describes the image answered.
type ScreenshotResult struct {
	Width        int     `json:"width" jsonschema:"the image's width in pixels"`
	Height       int     `json:"height"`
	ScreenWidth  int     `json:"screen_width" jsonschema:"the screen's width: click coordinates are screen pixels, so multiply image x by screen_width/width"`
	ScreenHeight int     `json:"screen_height"`
	Scale        float64 `json:"scale" jsonschema:"image pixels per screen pixel"`
}

// PointArgs name a point on the screen.
type PointArgs struct {
	X      int    `json:"x" jsonschema:"screen x in pixels (from the left)"`
	Y      int    `json:"y" jsonschema:"screen y in pixels (from the top)"`
	Button string `json:"button,omitempty" jsonschema:"left (default), right or middle"`
}

// PointerArgs move the pointer.
type PointerArgs struct {
	X int `json:"x" jsonschema:"screen x in pixels"`
	Y int `json:"y" jsonschema:"screen y in pixels"`
}

// ScrollArgs are display_scroll's arguments.
type ScrollArgs struct {
	X         *int   `json:"x,omitempty" jsonschema:"where to scroll (default: where the pointer is)"`
	Y         *int   `json:"y,omitempty"`
	Direction string `json:"direction,omitempty" jsonschema:"up, down (default), left or right"`
	Amount    int    `json:"amount,omitempty" jsonschema:"wheel notches, 1-100 (default 1)"`
}

// DragArgs are display_drag's arguments.
type DragArgs struct {
	FromX  int    `json:"from_x"`
	FromY  int    `json:"from_y"`
	ToX    int    `json:"to_x"`
	ToY    int    `json:"to_y"`
	Button string `json:"button,omitempty" jsonschema:"left (default), right or middle"`
}

// TypeArgs are display_type's arguments.
type TypeArgs struct {
	Text string `json:"text" jsonschema:"text typed as key presses into the focused window"`
}

// KeyArgs are display_key's arguments.
type KeyArgs struct {
	Key string `json:"key" jsonschema:"a key or chord: Return, Escape, Tab, BackSpace, Page_Up, F5, ctrl+c, ctrl+shift+t"`
}

// Pointer answers pointer actions: where the pointer is afterwards.
type Pointer struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// TypedResult answers display_type.
type TypedResult struct {
	Typed int `json:"typed" jsonschema:"characters typed"`
}

// KeyPressed answers display_key.
type KeyPressed struct {
	Key       string   `json:"key"`
	Modifiers []string `json:"modifiers,omitempty"`
}

// WindowsResult answers display_windows.
type WindowsResult struct {
	Windows []api.Window `json:"windows"`
}

func (s *Service) addDisplayTools() {
	act := &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_screenshot", Title: "Screenshot",
		Description: "Take a screenshot of the container's X display, answered as a PNG image scaled to at most max_width " +
			"pixels wide. Coordinates for display_click and the others are screen pixels: scale image positions by " +
			"screen_width/width.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, s.displayScreenshot)
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_click", Title: "Click",
		Description: "Move the pointer to x,y (screen pixels) and click a button (left by default).", Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in PointArgs) (*mcp.CallToolResult, Pointer, error) {
			return s.pointer(ctx, req, "/mouse/click", map[string]any{"x": in.X, "y": in.Y, "button": button(in.Button)})
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_double_click", Title: "Double-click",
		Description: "Move the pointer to x,y and double-click.", Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in PointArgs) (*mcp.CallToolResult, Pointer, error) {
			return s.pointer(ctx, req, "/mouse/double-click", map[string]any{"x": in.X, "y": in.Y, "button": button(in.Button)})
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_move", Title: "Move the pointer",
		Description: "Move the pointer to x,y without clicking (hover).", Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in PointerArgs) (*mcp.CallToolResult, Pointer, error) {
			return s.pointer(ctx, req, "/mouse/move", map[string]any{"x": in.X, "y": in.Y})
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_scroll", Title: "Scroll",
		Description: "Turn the mouse wheel amount notches in a direction, at x,y when given.", Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in ScrollArgs) (*mcp.CallToolResult, Pointer, error) {
			body := map[string]any{}
			if in.X != nil && in.Y != nil {
				body["x"], body["y"] = *in.X, *in.Y
			}
			if in.Direction != "" {
				body["direction"] = in.Direction
			}
			if in.Amount != 0 {
				body["amount"] = in.Amount
			}
			return s.pointer(ctx, req, "/mouse/scroll", body)
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_drag", Title: "Drag",
		Description: "Press a button at from_x,from_y, move to to_x,to_y and release it.", Annotations: act},
		func(ctx context.Context, req *mcp.CallToolRequest, in DragArgs) (*mcp.CallToolResult, Pointer, error) {
			return s.pointer(ctx, req, "/input/drag", map[string]any{"from": api.Point{X: in.FromX, Y: in.FromY},
				"to": api.Point{X: in.ToX, Y: in.ToY}, "button": button(in.Button)})
		})
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_type", Title: "Type text",
		Description: "Type text into the focused window as key presses (any Unicode). Click the field first to focus it.",
		Annotations: act}, s.displayType)
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_key", Title: "Press a key",
		Description: "Press a key or chord in the focused window: Return, Escape, Tab, ctrl+c, alt+F4, ctrl+shift+t.",
		Annotations: act}, s.displayKey)
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_windows", Title: "List windows",
		Description: "The top-level windows: id, title, pid, position and size in screen pixels, and which is active.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.displayWindows)
}

func button(b string) string {
	if b == "" {
		return "left"
	}
	return b
}

func (s *Service) pointer(ctx context.Context, req *mcp.CallToolRequest, path string, body map[string]any) (*mcp.CallToolResult, Pointer, error) {
	var p struct {
		X int `json:"x"`
		Y int `json:"y"`
		api.DragResult
	}
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "display", path: displayPrefix + path, body: body}, &p); err != nil {
		return nil, Pointer{}, toolErr(err)
	}
	if path == "/input/drag" {
		p.X, p.Y = p.To.X, p.To.Y
	}
	return textResult(fmt.Sprintf("done; the pointer is at %d,%d", p.X, p.Y)), Pointer{X: p.X, Y: p.Y}, nil
}

func (s *Service) displayScreenshot(ctx context.Context, req *mcp.CallToolRequest, in ScreenshotArgs) (*mcp.CallToolResult, ScreenshotResult, error) {
	who := callerOf(req.Extra)
	maxW := in.MaxWidth
	if maxW <= 0 {
		maxW = 1280
	}
	var screen api.Info
	if err := s.be.json(ctx, who, call{method: http.MethodGet, service: "display", path: displayPrefix + "/info"}, &screen); err != nil {
		return nil, ScreenshotResult{}, toolErr(err)
	}
	q := url.Values{"format": {"png"}}
	scale := 1.0
	if screen.Width > maxW {
		scale = float64(maxW) / float64(screen.Width)
		q.Set("scale", strconv.FormatFloat(scale, 'f', 6, 64))
	}
	raw, _, err := s.be.bytes(ctx, who, call{method: http.MethodGet, service: "display", path: displayPrefix + "/screenshots", query: q}, maxScreenshot)
	if err != nil {
		return nil, ScreenshotResult{}, toolErr(err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return nil, ScreenshotResult{}, toolErr(fmt.Errorf("the display service's screenshot did not decode: %w", err))
	}
	out := ScreenshotResult{Width: cfg.Width, Height: cfg.Height, ScreenWidth: screen.Width, ScreenHeight: screen.Height, Scale: scale}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: raw, MIMEType: "image/png"},
		&mcp.TextContent{Text: fmt.Sprintf("screenshot %dx%d of a %dx%d screen", cfg.Width, cfg.Height, screen.Width, screen.Height)}}}, out, nil
}

func (s *Service) displayType(ctx context.Context, req *mcp.CallToolRequest, in TypeArgs) (*mcp.CallToolResult, TypedResult, error) {
	var t api.Typed
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "display", path: displayPrefix + "/keyboard/type",
		body: map[string]any{"text": in.Text}}, &t); err != nil {
		return nil, TypedResult{}, toolErr(err)
	}
	return textResult(fmt.Sprintf("typed %d characters", t.Typed)), TypedResult{Typed: t.Typed}, nil
}

func (s *Service) displayKey(ctx context.Context, req *mcp.CallToolRequest, in KeyArgs) (*mcp.CallToolResult, KeyPressed, error) {
	var k api.KeyResult
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodPost, service: "display", path: displayPrefix + "/keyboard/key",
		body: map[string]any{"key": in.Key}}, &k); err != nil {
		return nil, KeyPressed{}, toolErr(err)
	}
	return textResult("pressed " + in.Key), KeyPressed{Key: k.Key, Modifiers: k.Modifiers}, nil
}

func (s *Service) displayWindows(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, WindowsResult, error) {
	var ws []api.Window
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "display", path: displayPrefix + "/windows"}, &ws); err != nil {
		return nil, WindowsResult{}, toolErr(err)
	}
	if ws == nil {
		ws = []api.Window{}
	}
	var b bytes.Buffer
	for _, w := range ws {
		fmt.Fprintf(&b, "%d %q at %d,%d %dx%d active=%v\n", w.ID, w.Name, w.X, w.Y, w.Width, w.Height, w.Active)
	}
	return textResult(trimText(b.String(), 0, s.set.OutputBudget).Text), WindowsResult{Windows: ws}, nil
}
