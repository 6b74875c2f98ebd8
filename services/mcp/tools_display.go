package mcp

import (
	"bytes"
	"cmp"
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform"
)

// Every display tool but display_screenshot is a route of the display
// service; here is how each answer reads for a model: a marked screenshot
// as image content, a list as lines, an action as what it did.
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
	views["display_windows"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, max int) (*mcp.CallToolResult, error) {
		l, err := as[struct {
			Windows []struct {
				ID                  uint32
				Name                string
				X, Y, Width, Height int
				Active              bool
			}
		}](out)
		var b strings.Builder
		for _, w := range l.Windows {
			fmt.Fprintf(&b, "%d %q at %d,%d %dx%d active=%v\n", w.ID, w.Name, w.X, w.Y, w.Width, w.Height, w.Active)
		}
		return structuredResult(trimText(b.String(), 0, max).Text, out), err
	}}

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

	views["display_accessibility"] = view{budget: true, answer: elements}
	views["display_find"] = view{answer: elements}
	for _, name := range []string{"display_element_click", "display_element_focus", "display_element_set_value",
		"display_element_action", "display_element_scroll_into_view"} {
		views[name] = view{answer: elementActed}
	}

	views["display_recording_start"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		r, err := as[recording](out)
		return structuredResult(fmt.Sprintf("recording %s started (%s, %d fps, at most %d s)", r.ID, r.Format, r.Framerate, r.MaxSeconds), out), err
	}}
	views["display_recording_stop"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		r, err := as[recording](out)
		return structuredResult(fmt.Sprintf("recording %s %s (%s), %d bytes, %d actions", r.ID, r.Status, r.StopReason, r.Bytes, r.Events), out), err
	}}
	views["display_recordings"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		l, err := as[struct{ Recordings []recording }](out)
		var b strings.Builder
		for _, r := range l.Recordings {
			fmt.Fprintf(&b, "%s %s %s, %d bytes, %d actions, started %s\n", r.ID, r.Status, r.Format, r.Bytes, r.Events, r.StartedAt.Format(time.RFC3339))
		}
		return structuredResult(b.String(), out), err
	}}
	views["display_recording_timeline"] = view{answer: func(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
		tl, err := as[struct {
			Events []struct {
				OffsetMS int64 `json:"offset_ms"`
				Action   string
				Element  *struct{ Role, Name string }
				OK       bool
			}
		}](out)
		var b strings.Builder
		for _, e := range tl.Events {
			el := ""
			if e.Element != nil {
				el = fmt.Sprintf("[%s] %s", e.Element.Role, e.Element.Name)
			}
			fmt.Fprintf(&b, "%7d ms %s %s ok=%v\n", e.OffsetMS, e.Action, el, e.OK)
		}
		return structuredResult(b.String(), out), err
	}}
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

// recording is what the recording views read of a recording.
type recording struct {
	ID, Status, Format, StopReason string
	Framerate, MaxSeconds, Events  int
	Bytes                          int64
	StartedAt                      time.Time
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

// elements reads a flat accessibility tree as indented lines, one an
// element, at most max characters.
func elements(_ *Service, _ map[string]json.RawMessage, out any, max int) (*mcp.CallToolResult, error) {
	t, err := as[struct {
		Elements []struct {
			ID, Role, Name, Value string
			Depth                 int
			Bounds                *struct{ X, Y, Width, Height int }
		}
		Reason string
	}](out)
	if len(t.Elements) == 0 {
		return structuredResult("no elements: "+cmp.Or(t.Reason, "nothing matched"), out), err
	}
	var b strings.Builder
	for _, e := range t.Elements {
		fmt.Fprintf(&b, "%s[%s] %q id=%s", strings.Repeat("  ", e.Depth), e.Role, e.Name, e.ID)
		if e.Value != "" {
			fmt.Fprintf(&b, " value=%q", e.Value)
		}
		if e.Bounds != nil {
			fmt.Fprintf(&b, " at %d,%d %dx%d", e.Bounds.X, e.Bounds.Y, e.Bounds.Width, e.Bounds.Height)
		}
		b.WriteByte('\n')
	}
	return structuredResult(trimText(b.String(), 0, max).Text, out), err
}

// elementActed reads an element action's answer (the display's
// ElementResult): how it was done and what the element is now.
func elementActed(_ *Service, _ map[string]json.RawMessage, out any, _ int) (*mcp.CallToolResult, error) {
	r, err := as[struct {
		Element      struct{ Role, Name string }
		Method       string
		Action       string
		TargetClosed bool `json:"target_closed"`
	}](out)
	msg := "done by " + r.Method
	if r.Action != "" {
		msg += " " + r.Action
	}
	if r.TargetClosed {
		return structuredResult(msg+fmt.Sprintf("; [%s] %q then closed with its window or application (the action was taken)",
			r.Element.Role, r.Element.Name), out), err
	}
	return structuredResult(msg+fmt.Sprintf("; the element is now [%s] %q", r.Element.Role, r.Element.Name), out), err
}
