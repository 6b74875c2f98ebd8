package notes

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// diagram is a parsed diagram block: nodes in order of first mention and
// edges between them.
type diagram struct {
	Direction string // "TD" (top down, default) or "LR"
	Nodes     []string
	Label     map[string]string
	Edges     []edge
}

type edge struct{ From, To, Label string }

const maxDiagramNodes = 200

// parseDiagram reads the diagram language, one statement a line:
//
//	direction LR | direction TD
//	A [Text in the box]
//	A -> B
//	A -> B -> C
//	A -> B: label of the edge
//
// Node names are 1-64 of A-Z a-z 0-9 _ -; # starts a comment.
func parseDiagram(src string) (*diagram, error) {
	d := &diagram{Direction: "TD", Label: map[string]string{}}
	seen := map[string]bool{}
	node := func(line int, raw string) (string, error) {
		name := strings.TrimSpace(raw)
		text := ""
		if i := strings.IndexByte(name, '['); i >= 0 {
			if !strings.HasSuffix(name, "]") {
				return "", fmt.Errorf("line %d: %q: a box text opens with [ and ends the node with ]", line, raw)
			}
			text = strings.TrimSpace(name[i+1 : len(name)-1])
			name = strings.TrimSpace(name[:i])
		}
		if !blockIDOK(name) {
			return "", fmt.Errorf("line %d: %q is not a node name (1-64 of A-Z a-z 0-9 _ -)", line, name)
		}
		if !seen[name] {
			if len(d.Nodes) == maxDiagramNodes {
				return "", fmt.Errorf("line %d: more than %d nodes", line, maxDiagramNodes)
			}
			seen[name] = true
			d.Nodes = append(d.Nodes, name)
		}
		if text != "" {
			d.Label[name] = text
		}
		return name, nil
	}
	for n, line := range strings.Split(src, "\n") {
		ln := n + 1
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "direction "); ok {
			switch strings.TrimSpace(rest) {
			case "LR", "TD":
				d.Direction = strings.TrimSpace(rest)
			default:
				return nil, fmt.Errorf("line %d: direction must be LR or TD", ln)
			}
			continue
		}
		label := ""
		if strings.Contains(line, "->") {
			if i := strings.LastIndex(line, ":"); i > strings.LastIndex(line, "->") {
				label = strings.TrimSpace(line[i+1:])
				line = line[:i]
			}
		}
		parts := strings.Split(line, "->")
		var names []string
		for _, p := range parts {
			name, err := node(ln, p)
			if err != nil {
				return nil, err
			}
			names = append(names, name)
		}
		for i := 1; i < len(names); i++ {
			l := ""
			if i == len(names)-1 {
				l = label
			}
			d.Edges = append(d.Edges, edge{names[i-1], names[i], l})
		}
	}
	return d, nil
}

// layers puts each node in the layer of its longest path from a node
// without incoming edges; edges closing a cycle are not followed.
func (d *diagram) layers() map[string]int {
	out := map[string][]string{}
	for _, e := range d.Edges {
		out[e.From] = append(out[e.From], e.To)
	}
	layer := map[string]int{}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string, depth int)
	visit = func(n string, depth int) {
		if state[n] == 1 || (state[n] == 2 && layer[n] >= depth) {
			return
		}
		if depth > layer[n] || state[n] == 0 {
			layer[n] = max(layer[n], depth)
		}
		state[n] = 1
		for _, m := range out[n] {
			visit(m, layer[n]+1)
		}
		state[n] = 2
	}
	incoming := map[string]bool{}
	for _, e := range d.Edges {
		if e.From != e.To {
			incoming[e.To] = true
		}
	}
	for _, n := range d.Nodes {
		if !incoming[n] {
			visit(n, 0)
		}
	}
	for _, n := range d.Nodes { // nodes only on cycles
		if state[n] == 0 {
			visit(n, 0)
		}
	}
	return layer
}

// renderDiagram lays the nodes out in layers (rows top down, or columns
// left to right), each layer centred, and draws boxes with their text and
// arrows clipped at the boxes' borders.
func renderDiagram(d *svgDoc, dg *diagram) {
	const boxH, size = 36.0, 14.0
	layer := dg.layers()
	var byLayer [][]string
	for _, n := range dg.Nodes {
		l := layer[n]
		for len(byLayer) <= l {
			byLayer = append(byLayer, nil)
		}
		byLayer[l] = append(byLayer[l], n)
	}
	boxW := map[string]float64{}
	text := func(n string) string {
		if t, ok := dg.Label[n]; ok {
			return t
		}
		return n
	}
	for _, n := range dg.Nodes {
		boxW[n] = max(80, float64(utf8.RuneCountInString(text(n)))*size*charW+24)
	}
	type pt struct{ x, y float64 }
	center := map[string]pt{}
	lr := dg.Direction == "LR"
	// extent of each layer along its own axis
	extent := make([]float64, len(byLayer))
	thick := make([]float64, len(byLayer)) // the layer's size across
	for i, ns := range byLayer {
		for j, n := range ns {
			if lr {
				extent[i] += boxH
				if j > 0 {
					extent[i] += 24
				}
				thick[i] = max(thick[i], boxW[n])
			} else {
				extent[i] += boxW[n]
				if j > 0 {
					extent[i] += 32
				}
				thick[i] = boxH
			}
		}
	}
	widest := 0.0
	for _, e := range extent {
		widest = max(widest, e)
	}
	across := pad
	for i, ns := range byLayer {
		along := pad + (widest-extent[i])/2
		for _, n := range ns {
			if lr {
				center[n] = pt{across + thick[i]/2, along + boxH/2}
				along += boxH + 24
			} else {
				center[n] = pt{along + boxW[n]/2, across + boxH/2}
				along += boxW[n] + 32
			}
		}
		if lr {
			across += thick[i] + 72
		} else {
			across += boxH + 56
		}
	}
	across -= map[bool]float64{true: 72, false: 56}[lr]
	if len(byLayer) == 0 {
		across = 0
	}
	if lr {
		d.w, d.h = max(d.w, across+pad), widest+2*pad
	} else {
		d.w, d.h = max(d.w, widest+2*pad), across+pad
	}
	// centre the drawing in the width
	shift := 0.0
	if !lr {
		shift = (d.w - widest - 2*pad) / 2
	}
	d.b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333333"/></marker></defs>` + "\n")
	clip := func(c pt, hw, hh, dx, dy float64) pt {
		t := math.Inf(1)
		if dx != 0 {
			t = min(t, hw/math.Abs(dx))
		}
		if dy != 0 {
			t = min(t, hh/math.Abs(dy))
		}
		return pt{c.x + dx*t, c.y + dy*t}
	}
	for _, e := range dg.Edges {
		a, b := center[e.From], center[e.To]
		a.x += shift
		b.x += shift
		if e.From == e.To {
			x, y := a.x+boxW[e.From]/2, a.y
			fmt.Fprintf(&d.b, `<path d="M%s,%s C%s,%s %s,%s %s,%s" fill="none" stroke="#333333" stroke-width="1.5" marker-end="url(#arrow)"/>`+"\n",
				num(x), num(y-8), num(x+30), num(y-24), num(x+30), num(y+24), num(x), num(y+8))
			if e.Label != "" {
				fmt.Fprintf(&d.b, `<text x="%s" y="%s" font-size="12">%s</text>`+"\n", num(x+34), num(y+4), esc(e.Label))
				d.w = max(d.w, x+40+float64(utf8.RuneCountInString(e.Label))*12*charW)
			}
			continue
		}
		if span := layer[e.To] - layer[e.From]; span > 1 || span < -1 {
			// An edge skipping layers would cross the boxes between: it
			// leaves and enters from the side and bows around them.
			var p, q, c1, c2 pt
			if lr {
				p, q = pt{a.x, a.y + boxH/2}, pt{b.x, b.y + boxH/2}
				y := max(p.y, q.y) + 28
				c1, c2 = pt{p.x, y}, pt{q.x, y}
				d.h = max(d.h, y+pad)
			} else {
				p, q = pt{a.x + boxW[e.From]/2, a.y}, pt{b.x + boxW[e.To]/2, b.y}
				x := max(p.x, q.x) + 48
				c1, c2 = pt{x, p.y}, pt{x, q.y}
				d.w = max(d.w, x+pad)
			}
			fmt.Fprintf(&d.b, `<path d="M%s,%s C%s,%s %s,%s %s,%s" fill="none" stroke="#333333" stroke-width="1.5" marker-end="url(#arrow)"/>`+"\n",
				num(p.x), num(p.y), num(c1.x), num(c1.y), num(c2.x), num(c2.y), num(q.x), num(q.y))
			if e.Label != "" {
				fmt.Fprintf(&d.b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" stroke="#ffffff" stroke-width="3" paint-order="stroke">%s</text>`+"\n",
					num((c1.x+c2.x)/2), num((c1.y+c2.y)/2), esc(e.Label))
			}
			continue
		}
		dx, dy := b.x-a.x, b.y-a.y
		p := clip(a, boxW[e.From]/2, boxH/2, dx, dy)
		q := clip(b, boxW[e.To]/2, boxH/2, -dx, -dy)
		fmt.Fprintf(&d.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333" stroke-width="1.5" marker-end="url(#arrow)"/>`+"\n",
			num(p.x), num(p.y), num(q.x), num(q.y))
		if e.Label != "" {
			fmt.Fprintf(&d.b, `<text x="%s" y="%s" font-size="12" text-anchor="middle" stroke="#ffffff" stroke-width="3" paint-order="stroke">%s</text>`+"\n",
				num((p.x+q.x)/2), num((p.y+q.y)/2-4), esc(e.Label))
		}
	}
	for _, n := range dg.Nodes {
		c := center[n]
		c.x += shift
		fmt.Fprintf(&d.b, `<g><rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="#eef3fb" stroke="#3b6fb6" stroke-width="1.5"/>`+
			`<text x="%s" y="%s" font-size="%s" text-anchor="middle">%s</text></g>`+"\n",
			num(c.x-boxW[n]/2), num(c.y-boxH/2), num(boxW[n]), num(boxH), num(c.x), num(c.y+size*0.35), num(size), esc(text(n)))
	}
}
