package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png" // screenshot sizes
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
)

// Every display tool but display_screenshot is a route of the display
// service, read for a model by its route's Text; a marked screenshot
// answers its image as image content.
func init() {
	views["display_screenshot_marked"] = view{answer: func(s *Service, _ map[string]json.RawMessage, out any, max int) (*mcp.CallToolResult, error) {
		return withImage(out, func(m struct {
			Width, Height int
			Reason        string
			Marks         []struct {
				N          int
				ElementID  string `json:"element_id"`
				Role, Name string
			}
		}) string {
			var b strings.Builder
			fmt.Fprintf(&b, "screenshot %dx%d with %d marks", m.Width, m.Height, len(m.Marks))
			if m.Reason != "" {
				b.WriteString(" (" + m.Reason + ")")
			}
			b.WriteString("\n")
			for _, k := range m.Marks {
				fmt.Fprintf(&b, "%d: [%s] %q id=%s\n", k.N, k.Role, k.Name, k.ElementID)
			}
			return trimText(b.String(), 0, max).Text
		})
	}}
	// The tree takes max_chars; it reads by its route's Text, as do the
	// other display tools.
	views["display_accessibility"] = view{budget: true}
}

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
	if err := s.be.JSON(ctx, platform.ServiceCall{Method: http.MethodGet, Service: "display", Path: prefix + "/info", Header: who.forward(nil)}, &screen); err != nil {
		return nil, ScreenshotResult{}, toolErr(err)
	}
	q := url.Values{"format": {"png"}}
	scale := 1.0
	if screen.Width > maxW {
		scale = float64(maxW) / float64(screen.Width)
		q.Set("scale", strconv.FormatFloat(scale, 'f', 6, 64))
	}
	raw, err := s.be.Bytes(ctx, platform.ServiceCall{Method: http.MethodGet, Service: "display", Path: prefix + "/screenshots", Query: q,
		Header: who.forward(nil)}, maxScreenshot)
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

// withImage answers out's image member (a PNG, base64) as image content
// beside text of the rest read as a T; the rest is the structured content.
func withImage[T any](out any, text func(T) string) (*mcp.CallToolResult, error) {
	// An image is large: the service's JSON is read once (as would
	// encode it again first), and its image not as JSON at all.
	raw, isRaw := out.(json.RawMessage)
	var err error
	if !isRaw {
		raw, err = json.Marshal(out)
	}
	var img []byte
	if err == nil {
		img, raw = cutImage(raw)
	}
	var m map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err == nil && img == nil {
		err = json.Unmarshal(m["image"], &img)
	}
	delete(m, "image")
	var v T
	if err == nil {
		v, err = as[T](m)
	}
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: img, MIMEType: "image/png"},
		&mcp.TextContent{Text: text(v)}}, StructuredContent: m}, nil
}

// imageFirst is how the display's marked screenshot answers: the image
// is its first member.
var imageFirst = []byte(`{"image":"`)

// cutImage takes an answer's leading image member out without reading it
// as JSON (the decoder's scanner is the slowest part of a screenshot's
// trip): base64 has no quote and needs no escape, so the member ends at
// the next quote. It answers the image and the rest of the object, or no
// image and raw as it was when the answer does not start so.
func cutImage(raw []byte) ([]byte, []byte) {
	rest, ok := bytes.CutPrefix(raw, imageFirst)
	end := bytes.IndexByte(rest, '"')
	if !ok || end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, raw
	}
	img := make([]byte, base64.StdEncoding.DecodedLen(end))
	n, err := base64.StdEncoding.Decode(img, rest[:end])
	if err != nil {
		return nil, raw
	}
	rest = bytes.TrimPrefix(bytes.TrimLeft(rest[end+1:], " \t\r\n"), []byte(","))
	return img[:n], append([]byte{'{'}, rest...)
}
