package notes

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Rendering constants: fonts are assumed to advance charW × size per
// character (a fair average for sans-serif, exact for monospace), which is
// what wrapping and box sizes are computed from.
const (
	pad      = 16.0
	fontSize = 16.0
	lineH    = 1.4
	charW    = 0.6
)

type svgDoc struct {
	b    strings.Builder
	w, h float64
}

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			if r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r != 0xFFFE && r != 0xFFFF && !(r >= 0xD800 && r <= 0xDFFF)) {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func num(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", f), "0"), ".")
}

func (d *svgDoc) finish(width float64) []byte {
	h := math.Ceil(d.h)
	scale := width / d.w
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<svg xmlns="http://www.w3.org/2000/svg" width="` + num(width) + `" height="` + num(h*scale) +
		`" viewBox="0 0 ` + num(d.w) + ` ` + num(h) + `" font-family="sans-serif" font-size="` + num(fontSize) + `">` + "\n" +
		`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n" + d.b.String() + "</svg>\n")
}

// wrap breaks text into lines of at most n characters at spaces (a longer
// word is cut); newlines are kept.
func wrap(text string, n int) []string {
	n = max(n, 1)
	var out []string
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			for utf8.RuneCountInString(w) > n {
				if line != "" {
					out = append(out, line)
					line = ""
				}
				r := []rune(w)
				out = append(out, string(r[:n]))
				w = string(r[n:])
			}
			switch {
			case line == "":
				line = w
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= n:
				line += " " + w
			default:
				out = append(out, line)
				line = w
			}
		}
		out = append(out, line)
	}
	return out
}

// renderSVG renders a block at a width in pixels.
func renderSVG(b Block, width int) ([]byte, error) {
	w := float64(width)
	d := &svgDoc{w: w}
	switch b.Type {
	case "heading":
		size := fontSize * (2.0 - float64(b.Level-1)*0.2)
		textLines(d, wrap(b.Text, int((w-2*pad)/(size*charW))), pad, size, `font-weight="bold"`)
	case "text":
		textLines(d, wrap(b.Text, int((w-2*pad)/(fontSize*charW))), pad, fontSize, "")
	case "quote":
		start := d.h
		textLines(d, wrap(b.Text, int((w-3*pad)/(fontSize*charW))), 2*pad, fontSize, `font-style="italic" fill="#444444"`)
		fmt.Fprintf(&d.b, `<rect x="%s" y="%s" width="4" height="%s" fill="#bbbbbb"/>`+"\n", num(pad), num(start+pad/2), num(d.h-start-pad))
	case "list":
		var lines []string
		n := int((w-2*pad)/(fontSize*charW)) - 4
		for i, it := range b.Items {
			mark := "•"
			if b.Ordered {
				mark = fmt.Sprintf("%d.", i+1)
			}
			for j, l := range wrap(it, n) {
				if j == 0 {
					lines = append(lines, mark+" "+l)
				} else {
					lines = append(lines, "   "+l)
				}
			}
		}
		textLines(d, lines, pad, fontSize, "")
	case "code":
		// code keeps its indentation: lines are cut, never re-flowed
		lines := codeLines(b.Text, int((w-4*pad)/(fontSize*charW)))
		h := float64(len(lines))*fontSize*lineH + pad
		fmt.Fprintf(&d.b, `<rect x="%s" y="%s" width="%s" height="%s" rx="4" fill="#f5f5f5" stroke="#dddddd"/>`+"\n",
			num(pad), num(pad/2), num(w-2*pad), num(h))
		d.h = pad / 2
		textLines(d, lines, 2*pad, fontSize, `font-family="monospace" xml:space="preserve"`)
	case "math":
		renderMath(d, b.Text)
	case "diagram":
		dg, err := parseDiagram(b.Text)
		if err != nil {
			return nil, err
		}
		renderDiagram(d, dg)
	case "divider":
		d.h = 2 * pad
		fmt.Fprintf(&d.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#cccccc" stroke-width="2"/>`+"\n", num(pad), num(pad), num(w-pad), num(pad))
	}
	d.h = max(d.h, 2*pad)
	return d.finish(w), nil
}

// codeLines splits code into lines, keeping indentation, cutting lines
// longer than n characters.
func codeLines(text string, n int) []string {
	n = max(n, 1)
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\t", "    "), "\n") {
		r := []rune(l)
		for len(r) > n {
			out = append(out, string(r[:n]))
			r = r[n:]
		}
		out = append(out, string(r))
	}
	return out
}

// textLines writes lines as one <text> of <tspan>s below what d holds.
func textLines(d *svgDoc, lines []string, x, size float64, attrs string) {
	if len(lines) == 0 {
		lines = []string{""}
	}
	y := d.h + pad + size
	fmt.Fprintf(&d.b, `<text x="%s" y="%s" font-size="%s" %s>`, num(x), num(y), num(size), attrs)
	for i, l := range lines {
		dy := "0"
		if i > 0 {
			dy = num(size * lineH)
		}
		fmt.Fprintf(&d.b, `<tspan x="%s" dy="%s">%s</tspan>`, num(x), dy, esc(l))
	}
	d.b.WriteString("</text>\n")
	d.h = y + float64(len(lines)-1)*size*lineH + pad
}
