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

	"deckhand/platform"
)

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

// addDisplayTools adds display_screenshot, which is two routes (the
// screen's size, then its PNG scaled to it): an image travels as the
// route's own bytes, not as base64 in a JSON answer a tool would need.
func (s *Service) addDisplayTools() {
	mcp.AddTool(s.server, &mcp.Tool{Name: "display_screenshot", Title: "Screenshot",
		Description: "Take a screenshot of the container's X display, answered as a PNG image scaled to at most max_width " +
			"pixels wide. Coordinates for display_click and the others are screen pixels: scale image positions by " +
			"screen_width/width.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, s.displayScreenshot)
}

func (s *Service) displayScreenshot(ctx context.Context, req *mcp.CallToolRequest, in ScreenshotArgs) (*mcp.CallToolResult, ScreenshotResult, error) {
	const prefix = "/api/v1/display"
	who := callerOf(req.Extra)
	maxW := in.MaxWidth
	if maxW <= 0 {
		maxW = 1280
	}
	var screen struct{ Width, Height int }
	if err := s.be.JSON(ctx, platform.ServiceCall{Method: http.MethodGet, Service: "display", Path: prefix + "/info", Header: who.Forward(nil)}, &screen); err != nil {
		return nil, ScreenshotResult{}, toolErr(err)
	}
	q := url.Values{"format": {"png"}}
	scale := 1.0
	if screen.Width > maxW {
		scale = float64(maxW) / float64(screen.Width)
		q.Set("scale", strconv.FormatFloat(scale, 'f', 6, 64))
	}
	raw, err := s.be.Bytes(ctx, platform.ServiceCall{Method: http.MethodGet, Service: "display", Path: prefix + "/screenshots", Query: q,
		Header: who.Forward(nil)}, maxScreenshot)
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
