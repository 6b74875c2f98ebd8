package accessibility

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strconv"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// Mark is one numbered box of a marked screenshot.
type Mark struct {
	N         int          `json:"n" required:"true" doc:"the number drawn on the image, from 1"`
	ElementID string       `json:"element_id" required:"true"`
	Role      string       `json:"role" required:"true"`
	Name      string       `json:"name" required:"true"`
	Bounds    desktop.Rect `json:"bounds" required:"true" doc:"the element's bounds on the screen, clipped to it"`
}

// MarkedScreenshot answers GET .../screenshots/marked.
type MarkedScreenshot struct {
	Image  []byte `json:"image,omitempty" doc:"the screen as PNG with the boxes drawn, base64 (the display_screenshot_marked tool answers it as image content instead)"`
	Width  int    `json:"width" required:"true"`
	Height int    `json:"height" required:"true"`
	Marks  []Mark `json:"marks" required:"true"`
	Reason string `json:"reason,omitempty" doc:"why there are no marks"`
}

// MarkedQuery selects the elements to mark.
type MarkedQuery struct {
	Scope string `query:"scope" enum:"active,all" default:"active" doc:"mark the active window's elements, or every application's"`
}

// interactiveRoles are roles a person acts on even when the toolkit lists
// no action for them (a text field's only action may be missing).
var interactiveRoles = map[string]bool{
	"push button": true, "toggle button": true, "check box": true, "radio button": true, "text": true,
	"entry": true, "password text": true, "combo box": true, "menu item": true, "check menu item": true,
	"radio menu item": true, "link": true, "slider": true, "spin button": true, "page tab": true,
	"list item": true, "table cell": true, "tree item": true, "menu": true, "scroll bar": true,
}

// interactive: a node a person could act on, visible on the screen.
func interactive(n desktop.AccessibleNode) bool {
	if n.Bounds == nil || n.Bounds.Width <= 0 || n.Bounds.Height <= 0 || !n.Has("showing") || !n.Has("visible") {
		return false
	}
	if n.Role == "frame" || n.Role == "window" || n.Role == "dialog" || n.Role == "application" {
		return false
	}
	return interactiveRoles[n.Role] || len(n.Actions) > 0
}

// Marks numbers the interactive elements of nodes, in tree order, with
// their bounds clipped to screen.
func Marks(nodes []desktop.AccessibleNode, screen desktop.Rect) []Mark {
	marks := []Mark{}
	walk(nodes, func(n desktop.AccessibleNode) {
		if !interactive(n) {
			return
		}
		b := clip(*n.Bounds, screen)
		if b.Width <= 0 || b.Height <= 0 {
			return
		}
		marks = append(marks, Mark{N: len(marks) + 1, ElementID: n.ID, Role: n.Role, Name: n.Name, Bounds: b})
	})
	return marks
}

func clip(r, to desktop.Rect) desktop.Rect {
	x0, y0 := max(r.X, to.X), max(r.Y, to.Y)
	x1, y1 := min(r.X+r.Width, to.X+to.Width), min(r.Y+r.Height, to.Y+to.Height)
	return desktop.Rect{X: x0, Y: y0, Width: x1 - x0, Height: y1 - y0}
}

// MarkedScreenshot answers the screen with a numbered box over every
// interactive element and the list of marks, so a model can say "click 7"
// and the caller POST accessibility/{element_id}/click.
func (s *Service) MarkedScreenshot(ctx context.Context, q MarkedQuery) (MarkedScreenshot, error) {
	nodes, reason, err := s.tree(ctx, q.Scope, 0)
	if err != nil {
		return MarkedScreenshot{}, err
	}
	d, err := s.desk.Current()
	if err != nil {
		return MarkedScreenshot{}, err
	}
	screen, err := core.Bounds(d)
	if err != nil {
		return MarkedScreenshot{}, err
	}
	marks := Marks(nodes, screen)
	if len(marks) == 0 && reason == "" {
		reason = "no interactive element is visible"
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := d.Screenshot(sctx, desktop.ScreenshotOptions{Format: "png", Quality: 80, Region: screen, Scale: 1})
	if err != nil {
		return MarkedScreenshot{}, err
	}
	img, err := DrawMarks(raw, marks)
	if err != nil {
		return MarkedScreenshot{}, err
	}
	return MarkedScreenshot{Image: img, Width: screen.Width, Height: screen.Height, Marks: marks, Reason: reason}, nil
}

// markColor is a saturated magenta, rare in user interfaces.
var markColor = color.RGBA{R: 0xe0, G: 0x10, B: 0xa0, A: 0xff}

// DrawMarks draws each mark's box (2 px) and its number on a label at the
// box's top-left corner onto the PNG src.
func DrawMarks(src []byte, marks []Mark) ([]byte, error) {
	dec, err := png.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fault.Internal("decode the screenshot", err)
	}
	img := image.NewRGBA(dec.Bounds())
	draw.Draw(img, img.Bounds(), dec, dec.Bounds().Min, draw.Src)
	fill := func(r image.Rectangle, c color.Color) {
		draw.Draw(img, r.Intersect(img.Bounds()), image.NewUniform(c), image.Point{}, draw.Src)
	}
	face := basicfont.Face7x13
	for _, m := range marks {
		b := m.Bounds
		x0, y0, x1, y1 := b.X, b.Y, b.X+b.Width, b.Y+b.Height
		fill(image.Rect(x0, y0, x1, y0+2), markColor)
		fill(image.Rect(x0, y1-2, x1, y1), markColor)
		fill(image.Rect(x0, y0, x0+2, y1), markColor)
		fill(image.Rect(x1-2, y0, x1, y1), markColor)
		label := strconv.Itoa(m.N)
		w := font.MeasureString(face, label).Ceil() + 4
		fill(image.Rect(x0, y0, x0+w, y0+15), markColor)
		dr := font.Drawer{Dst: img, Src: image.White, Face: face, Dot: fixed.P(x0+2, y0+12)}
		dr.DrawString(label)
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, img); err != nil {
		return nil, fault.Internal("encode the marked screenshot", err)
	}
	return out.Bytes(), nil
}
