package notes

import (
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParseTeX(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []mathSeg
	}{
		{`x^2`, []mathSeg{{"x", 0}, {"2", 1}}},
		{`a_{ij}^{n+1}`, []mathSeg{{"a", 0}, {"ij", -1}, {"n+1", 1}}},
		{`\frac{a+b}{c}`, []mathSeg{{"(a+b)/c", 0}}},
		{`\sqrt{x^2}`, []mathSeg{{"√(x2)", 0}}},
		{`\alpha \leq \beta`, []mathSeg{{"α ≤ β", 0}}},
		{`\text{if } x`, []mathSeg{{"if  x", 0}}},
		{`\unknowncmd`, []mathSeg{{`\unknowncmd`, 0}}},
		{`{a`, []mathSeg{{"a", 0}}}, // an unclosed group ends at the end
		{`x^`, []mathSeg{{"x", 0}}},
	}
	for _, c := range cases {
		if got := parseTeX(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseTeX(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestDiagramLayers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		src  string
		want map[string]int
	}{
		{"a -> b -> c\na -> c", map[string]int{"a": 0, "b": 1, "c": 2}},
		{"a -> b\nb -> a", map[string]int{"a": 0, "b": 1}},                 // a cycle: no hang
		{"x -> y\ny -> z\nz -> x", map[string]int{"x": 0, "y": 1, "z": 2}}, // only a cycle
		{"solo [Alone]", map[string]int{"solo": 0}},
	}
	for _, c := range cases {
		d, err := parseDiagram(c.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.layers(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: layers %v, want %v", c.src, got, c.want)
		}
		for _, dir := range []string{"LR", "TD"} {
			svg, err := renderSVG(Block{Type: "diagram", Text: "direction " + dir + "\n" + c.src}, 400)
			if err != nil {
				t.Fatal(err)
			}
			dec := xml.NewDecoder(strings.NewReader(string(svg)))
			for {
				if _, err := dec.Token(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("%q %s: %v", c.src, dir, err)
				}
			}
		}
	}
	for _, bad := range []string{"a -> ", "a b -> c", "direction UP", "a [x"} {
		if _, err := parseDiagram(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v, want an error naming line 1", bad, err)
		}
	}
}

func TestTextIsEscapedAndControlCharactersDropped(t *testing.T) {
	t.Parallel()
	svg, err := renderSVG(Block{Type: "text", Text: "a\x01b <c> & \"d\""}, 800)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if !strings.Contains(s, "ab &lt;c&gt; &amp; &quot;d&quot;") {
		t.Fatalf("%s", s)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
}
