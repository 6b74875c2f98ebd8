package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png" // screenshot sizes
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The display's input tools (display_click, display_double_click,
// display_move, display_scroll, display_drag, display_type, display_key)
// are its routes (platform.Tool on the action table); here are their views
// and the tools that are not one route: a screenshot scaled for a model
// and the window list as an object.

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

// WindowsResult answers display_windows.
type WindowsResult struct {
	Windows []Window `json:"windows"`
}

// Window is a top-level window as the display's GET windows answers it.
type Window struct {
	ID     uint32 `json:"id" jsonschema:"the X11 window id"`
	Name   string `json:"name" jsonschema:"its title"`
	PID    int    `json:"pid" jsonschema:"its process (_NET_WM_PID), 0 when it does not say"`
	X      int    `json:"x" jsonschema:"the left edge of its client area in screen pixels"`
	Y      int    `json:"y" jsonschema:"the top edge of its client area in screen pixels"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Active bool   `json:"active"`
}

func (s *Service) addDisplayTools() {
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_screenshot", Title: "Screenshot",
		Description: "Take a screenshot of the container's X display, answered as a PNG image scaled to at most max_width " +
			"pixels wide. Coordinates for display_click and the others are screen pixels: scale image positions by " +
			"screen_width/width.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, s.displayScreenshot)
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_windows", Title: "List windows",
		Description: "The top-level windows: id, title, pid, position and size in screen pixels, and which is active.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.displayWindows)

	pointer := view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		p, err := as[struct{ X, Y int }](out)
		return structuredResult(fmt.Sprintf("done; the pointer is at %d,%d", p.X, p.Y), out), err
	}}
	for _, name := range []string{"display_click", "display_double_click", "display_move", "display_scroll"} {
		views[name] = pointer
	}
	views["display_drag"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		d, err := as[struct{ To struct{ X, Y int } }](out)
		return structuredResult(fmt.Sprintf("done; the pointer is at %d,%d", d.To.X, d.To.Y), out), err
	}}
	views["display_type"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		t, err := as[struct{ Typed int }](out)
		return structuredResult(fmt.Sprintf("typed %d characters", t.Typed), out), err
	}}
	views["display_key"] = view{answer: func(_ *Service, args map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		return structuredResult("pressed "+argString(args, "key"), out), nil
	}}
}

func (s *Service) displayScreenshot(ctx context.Context, req *mcp.CallToolRequest, in ScreenshotArgs) (*mcp.CallToolResult, ScreenshotResult, error) {
	who := callerOf(req.Extra)
	maxW := in.MaxWidth
	if maxW <= 0 {
		maxW = 1280
	}
	var screen struct{ Width, Height int }
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

func (s *Service) displayWindows(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, WindowsResult, error) {
	var ws []Window
	if err := s.be.json(ctx, callerOf(req.Extra), call{method: http.MethodGet, service: "display", path: displayPrefix + "/windows"}, &ws); err != nil {
		return nil, WindowsResult{}, toolErr(err)
	}
	if ws == nil {
		ws = []Window{}
	}
	var b bytes.Buffer
	for _, w := range ws {
		fmt.Fprintf(&b, "%d %q at %d,%d %dx%d active=%v\n", w.ID, w.Name, w.X, w.Y, w.Width, w.Height, w.Active)
	}
	return textResult(trimText(b.String(), 0, s.set.OutputBudget).Text), WindowsResult{Windows: ws}, nil
}
