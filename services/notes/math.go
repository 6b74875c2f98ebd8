package notes

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// mathSymbols maps TeX commands to the Unicode character they stand for.
var mathSymbols = map[string]string{
	"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ", "eta": "η",
	"theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π",
	"rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
	"Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ",
	"Omega": "Ω", "cdot": "·", "times": "×", "div": "÷", "pm": "±", "mp": "∓", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥",
	"neq": "≠", "ne": "≠", "approx": "≈", "equiv": "≡", "sim": "∼", "propto": "∝", "infty": "∞", "sum": "∑", "prod": "∏",
	"int": "∫", "oint": "∮", "partial": "∂", "nabla": "∇", "to": "→", "rightarrow": "→", "leftarrow": "←",
	"Rightarrow": "⇒", "Leftarrow": "⇐", "leftrightarrow": "↔", "iff": "⇔", "implies": "⇒", "in": "∈", "notin": "∉",
	"subset": "⊂", "subseteq": "⊆", "supset": "⊃", "cup": "∪", "cap": "∩", "emptyset": "∅", "forall": "∀", "exists": "∃",
	"neg": "¬", "land": "∧", "lor": "∨", "ldots": "…", "cdots": "⋯", "dots": "…", "circ": "∘", "degree": "°", "prime": "′",
	"langle": "⟨", "rangle": "⟩", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "mid": "∣", "ell": "ℓ",
	"hbar": "ℏ", "Re": "ℜ", "Im": "ℑ", "aleph": "ℵ", "sqrt": "√", "{": "{", "}": "}", "%": "%", "$": "$", "&": "&", "_": "_",
	"#": "#", ",": " ", ";": " ", ":": " ", "!": "", "quad": "  ", "qquad": "    ", " ": " ", "\\": " ",
	"lim": "lim", "sin": "sin", "cos": "cos", "tan": "tan", "log": "log", "ln": "ln", "exp": "exp", "max": "max", "min": "min",
}

// mathSeg is a run of text on the baseline (0), raised (1) or lowered (-1).
type mathSeg struct {
	text  string
	shift int
}

// texParser turns a TeX-ish string into runs. It is deliberately small:
// groups, scripts, \frac, \sqrt, \text and the symbols above; an unknown
// command is shown as written.
type texParser struct {
	s []rune
	i int
}

func (p *texParser) eof() bool { return p.i >= len(p.s) }

// group reads one argument: {…} or a single command or character, as plain text.
func (p *texParser) group() string {
	for !p.eof() && p.s[p.i] == ' ' {
		p.i++
	}
	if p.eof() {
		return ""
	}
	if p.s[p.i] == '{' {
		p.i++
		depth, start := 1, p.i
		for !p.eof() {
			switch p.s[p.i] {
			case '\\':
				p.i++
			case '{':
				depth++
			case '}':
				depth--
			}
			p.i++
			if depth == 0 {
				return flatten(parseTeX(string(p.s[start : p.i-1])))
			}
		}
		return flatten(parseTeX(string(p.s[start:])))
	}
	if p.s[p.i] == '\\' {
		start := p.i
		p.command()
		return flatten(parseTeX(string(p.s[start:p.i])))
	}
	p.i++
	return string(p.s[p.i-1])
}

// command consumes \name (or \x for one non-letter) and returns name.
func (p *texParser) command() string {
	p.i++ // backslash
	start := p.i
	for !p.eof() && (p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z') {
		p.i++
	}
	if p.i == start && !p.eof() {
		p.i++
	}
	return string(p.s[start:p.i])
}

func wrapParen(s string) string {
	if utf8.RuneCountInString(s) <= 1 {
		return s
	}
	return "(" + s + ")"
}

func parseTeX(src string) []mathSeg {
	p := &texParser{s: []rune(src)}
	var out []mathSeg
	add := func(t string, shift int) {
		if t == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].shift == shift {
			out[n-1].text += t
			return
		}
		out = append(out, mathSeg{t, shift})
	}
	for !p.eof() {
		c := p.s[p.i]
		switch c {
		case '^', '_':
			p.i++
			shift := 1
			if c == '_' {
				shift = -1
			}
			add(p.group(), shift)
		case '{', '}':
			if c == '{' {
				for _, sg := range parseTeX(p.group()) {
					add(sg.text, sg.shift)
				}
				continue
			}
			p.i++
		case '\\':
			name := p.command()
			switch name {
			case "frac", "dfrac", "tfrac":
				a, b := p.group(), p.group()
				add(wrapParen(a)+"/"+wrapParen(b), 0)
			case "sqrt":
				add("√"+wrapParen(p.group()), 0)
			case "text", "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "operatorname", "textbf", "textit", "mathbb", "mathcal":
				add(p.group(), 0)
			case "left", "right", "big", "Big", "bigg", "Bigg", "displaystyle":
			default:
				if sym, ok := mathSymbols[name]; ok {
					add(sym, 0)
				} else {
					add(`\`+name, 0)
				}
			}
		default:
			p.i++
			add(string(c), 0)
		}
	}
	return out
}

func flatten(segs []mathSeg) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.text)
	}
	return b.String()
}

// renderMath writes each line of the TeX as one line of text with raised
// and lowered runs.
func renderMath(d *svgDoc, src string) {
	size := fontSize * 1.25
	y := pad + size
	widest := 0.0
	for _, line := range strings.Split(strings.TrimSpace(src), "\n") {
		segs := parseTeX(strings.TrimSpace(line))
		fmt.Fprintf(&d.b, `<text x="%s" y="%s" font-family="serif" font-size="%s">`, num(pad), num(y+size*0.4), num(size))
		shift, w := 0.0, 0.0
		for _, sg := range segs {
			target, fs := 0.0, size
			if sg.shift != 0 {
				target, fs = -float64(sg.shift)*size*0.45, size*0.7
			}
			fmt.Fprintf(&d.b, `<tspan dy="%s" font-size="%s">%s</tspan>`, num(target-shift), num(fs), esc(sg.text))
			shift = target
			w += float64(utf8.RuneCountInString(sg.text)) * fs * charW
		}
		d.b.WriteString("</text>\n")
		widest = max(widest, w)
		y += size * 1.8
	}
	d.h = y
	d.w = max(d.w, widest+2*pad)
}
