package api

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/platform"
)

// Step is one action of input/act and input/batch. Which fields count
// depends on action; each action's endpoint documents them.
type Step struct {
	Action     string   `json:"action" required:"true" doc:"move, move-relative, click, double-click, down, up, scroll, type, key, key-down, key-up, click-at, type-at, drag, select, wait, sleep, focus-window, raise-window, minimize-window, close-window, move-window, resize-window, clipboard, reset (underscores work too)"`
	X          *int     `json:"x,omitempty"`
	Y          *int     `json:"y,omitempty"`
	DX         *int     `json:"dx,omitempty"`
	DY         *int     `json:"dy,omitempty"`
	Button     string   `json:"button,omitempty"`
	Clicks     int      `json:"clicks,omitempty"`
	Direction  string   `json:"direction,omitempty"`
	Amount     int      `json:"amount,omitempty"`
	Text       *string  `json:"text,omitempty"`
	DelayMS    int      `json:"delay_ms,omitempty"`
	Clear      bool     `json:"clear,omitempty"`
	Key        string   `json:"key,omitempty"`
	Modifiers  []string `json:"modifiers,omitempty"`
	Repeat     int      `json:"repeat,omitempty"`
	From       *Point   `json:"from,omitempty"`
	To         *Point   `json:"to,omitempty"`
	DurationMS *int     `json:"duration_ms,omitempty"`
	ID         *uint32  `json:"id,omitempty"`
	Width      *int     `json:"width,omitempty"`
	Height     *int     `json:"height,omitempty"`
	Until      string   `json:"until,omitempty"`
	Name       string   `json:"name,omitempty"`
	Class      string   `json:"class,omitempty"`
	PID        int      `json:"pid,omitempty"`
	Region     *Rect    `json:"region,omitempty"`
	TimeoutMS  int      `json:"timeout_ms,omitempty"`
}

const (
	maxText      = 20000
	maxBatch     = 1000
	maxTimeoutMS = 300000
)

var actionAliases = map[string]string{
	"mouse-move": "move", "move-to": "move", "mouse-down": "down", "mouse-up": "up",
	"left-click": "click", "doubleclick": "double-click", "type-text": "type", "press": "key",
	"focus": "focus-window", "raise": "raise-window", "minimize": "minimize-window",
	"close": "close-window", "clipboard-set": "clipboard", "set-clipboard": "clipboard",
}

// plan is a validated step, ready to run.
type plan struct {
	action string
	run    func(ctx context.Context, s *Service, d Driver) (any, error)
	// clickAt is where a click step clicked (a batch lets the window
	// manager move the focus there before a following key or type step)
	clickAt *Point
}

// compile validates st completely (fields, key names, regular expressions,
// screen bounds) and returns what runs it; field names in errors start
// with at ("steps[3]." in a batch).
func compile(st Step, at string, bounds Rect) (plan, error) {
	action := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(st.Action), "_", "-"))
	if a, ok := actionAliases[action]; ok {
		action = a
	}
	f := func(name string) string { return at + name }
	p := plan{action: action}

	point := func(xf, yf string, x, y *int, required bool) (*Point, error) {
		if x == nil && y == nil {
			if required {
				return nil, platform.Invalid(f(xf), "is required")
			}
			return nil, nil
		}
		if x == nil {
			return nil, platform.Invalid(f(xf), "is required when %s is given", yf)
		}
		if y == nil {
			return nil, platform.Invalid(f(yf), "is required when %s is given", xf)
		}
		pt := Point{*x, *y}
		return &pt, onScreen(f(xf), f(yf), pt, bounds)
	}
	button := func() (Button, error) {
		switch strings.ToLower(st.Button) {
		case "", "left", "1":
			return ButtonLeft, nil
		case "middle", "2":
			return ButtonMiddle, nil
		case "right", "3":
			return ButtonRight, nil
		}
		return 0, platform.Invalid(f("button"), "must be left, right or middle, got %q", st.Button)
	}
	text := func() (string, error) {
		if st.Text == nil {
			return "", platform.Invalid(f("text"), "is required")
		}
		if n := utf8.RuneCountInString(*st.Text); n > maxText {
			return "", platform.Invalid(f("text"), "must be at most %d characters, got %d", maxText, n)
		}
		if !utf8.ValidString(*st.Text) {
			return "", platform.Invalid(f("text"), "must be valid UTF-8")
		}
		for i, r := range []rune(*st.Text) {
			if (r < 0x20 && r != '\n' && r != '\r' && r != '\t') || r == 0x7f {
				return "", platform.Invalid(f("text"), "has control character U+%04X at character %d; "+
					"send control keys with the key action (\"ctrl+c\", \"BackSpace\")", r, i)
			}
		}
		if st.DelayMS < 0 || st.DelayMS > 1000 {
			return "", platform.Invalid(f("delay_ms"), "must be between 0 and 1000")
		}
		if n := utf8.RuneCountInString(*st.Text); n*st.DelayMS > maxTimeoutMS {
			return "", platform.Invalid(f("delay_ms"), "times the text length must stay under %d ms", maxTimeoutMS)
		}
		return *st.Text, nil
	}
	windowID := func() *uint32 { return st.ID }
	// times is a repeat count: 0 means once, else 1 to hi.
	times := func(name string, v, hi int) (int, error) {
		if v == 0 {
			return 1, nil
		}
		if v < 1 || v > hi {
			return 0, platform.Invalid(f(name), "must be between 1 and %d", hi)
		}
		return v, nil
	}
	// pair reads two required integer fields (both must be given before
	// either is range-checked) that must each lie in lo..hi.
	pair := func(af, bf string, a, b *int, lo, hi int) (int, int, error) {
		if a == nil {
			return 0, 0, platform.Invalid(f(af), "is required")
		}
		if b == nil {
			return 0, 0, platform.Invalid(f(bf), "is required")
		}
		for _, c := range []struct {
			name string
			v    int
		}{{af, *a}, {bf, *b}} {
			if c.v < lo || c.v > hi {
				return 0, 0, platform.Invalid(f(c.name), "must be between %d and %d", lo, hi)
			}
		}
		return *a, *b, nil
	}
	// onWindow runs do on the step's window, the active one when it names none.
	onWindow := func(do func(d Driver, wid uint32) (Window, error)) func(context.Context, *Service, Driver) (any, error) {
		id := windowID()
		return func(ctx context.Context, s *Service, d Driver) (any, error) {
			wid, err := s.resolveWindow(d, id)
			if err != nil {
				return nil, err
			}
			return do(d, wid)
		}
	}

	switch action {
	case "":
		return p, platform.Invalid(f("action"), "is required")

	case "move":
		pt, err := point("x", "y", st.X, st.Y, true)
		if err != nil {
			return p, err
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			if err := d.MoveTo(*pt); err != nil {
				return nil, err
			}
			return d.Pointer() // where the server put it (a grab may confine it)
		}

	case "move-relative":
		if st.DX == nil && st.DY == nil {
			return p, platform.Invalid(f("dx"), "dx or dy is required")
		}
		dx, dy := deref(st.DX), deref(st.DY)
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			cur, err := d.Pointer()
			if err != nil {
				return nil, err
			}
			to := Point{cur.X + dx, cur.Y + dy}
			if err := onScreen(f("dx"), f("dy"), to, bounds); err != nil {
				return nil, err
			}
			if err := d.MoveTo(to); err != nil {
				return nil, err
			}
			return d.Pointer()
		}

	case "click", "double-click", "click-at":
		pt, err := point("x", "y", st.X, st.Y, action == "click-at")
		if err != nil {
			return p, err
		}
		b, err := button()
		if err != nil {
			return p, err
		}
		clicks, err := times("clicks", st.Clicks, 3)
		if err != nil {
			return p, err
		}
		if action == "double-click" {
			clicks = 2
		}
		p.clickAt = pt
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return s.click(d, pt, b, clicks)
		}

	case "down", "up":
		pt, err := point("x", "y", st.X, st.Y, false)
		if err != nil {
			return p, err
		}
		b, err := button()
		if err != nil {
			return p, err
		}
		down := action == "down"
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			if pt != nil {
				if err := d.MoveTo(*pt); err != nil {
					return nil, err
				}
			}
			if err := s.button(d, b, down); err != nil {
				return nil, err
			}
			return d.Pointer()
		}

	case "scroll":
		pt, err := point("x", "y", st.X, st.Y, false)
		if err != nil {
			return p, err
		}
		var b Button
		switch strings.ToLower(st.Direction) {
		case "", "down":
			b = ButtonWheelDown
		case "up":
			b = ButtonWheelUp
		case "left":
			b = ButtonWheelLeft
		case "right":
			b = ButtonWheelRight
		default:
			return p, platform.Invalid(f("direction"), "must be up, down, left or right, got %q", st.Direction)
		}
		amount, err := times("amount", st.Amount, 100)
		if err != nil {
			return p, err
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return s.click(d, pt, b, amount)
		}

	case "type":
		t, err := text()
		if err != nil {
			return p, err
		}
		delay := time.Duration(st.DelayMS) * time.Millisecond
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			n, err := s.typeText(ctx, d, t, delay)
			return Typed{Typed: n}, err
		}

	case "type-at":
		pt, err := point("x", "y", st.X, st.Y, true)
		if err != nil {
			return p, err
		}
		t, err := text()
		if err != nil {
			return p, err
		}
		delay := time.Duration(st.DelayMS) * time.Millisecond
		clear := st.Clear
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			if _, err := s.click(d, pt, ButtonLeft, 1); err != nil {
				return nil, err
			}
			if err := d.Sync(); err != nil {
				return nil, err
			}
			s.awaitFocusAt(ctx, d, *pt)
			if clear {
				if err := s.chord(d, RuneKeysym('a'), []Keysym{keyNames["Control_L"]}, 1); err != nil {
					return nil, err
				}
				if err := s.chord(d, keyNames["Delete"], nil, 1); err != nil {
					return nil, err
				}
			}
			n, err := s.typeText(ctx, d, t, delay)
			return Typed{X: &pt.X, Y: &pt.Y, Typed: n}, err
		}

	case "key":
		sym, mods, err := ParseChord(f("key"), st.Key, st.Modifiers)
		if err != nil {
			return p, err
		}
		repeat, err := times("repeat", st.Repeat, 100)
		if err != nil {
			return p, err
		}
		res := KeyResult{Key: KeyName(sym)}
		for _, m := range mods {
			res.Modifiers = append(res.Modifiers, KeyName(m))
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return res, s.chord(d, sym, mods, repeat)
		}

	case "key-down", "key-up":
		sym, err := ParseKey(f("key"), st.Key)
		if err != nil {
			return p, err
		}
		down := action == "key-down"
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return KeyResult{Key: KeyName(sym)}, s.key(d, sym, down)
		}

	case "drag", "select":
		if st.From == nil {
			return p, platform.Invalid(f("from"), "is required")
		}
		if st.To == nil {
			return p, platform.Invalid(f("to"), "is required")
		}
		from, to := *st.From, *st.To
		if err := onScreen(f("from.x"), f("from.y"), from, bounds); err != nil {
			return p, err
		}
		if err := onScreen(f("to.x"), f("to.y"), to, bounds); err != nil {
			return p, err
		}
		b, err := button()
		if err != nil {
			return p, err
		}
		dur := 100
		if st.DurationMS != nil {
			dur = *st.DurationMS
		}
		if dur < 0 || dur > 10000 {
			return p, platform.Invalid(f("duration_ms"), "must be between 0 and 10000")
		}
		sel := action == "select"
		if sel && st.Button != "" && b != ButtonLeft {
			return p, platform.Invalid(f("button"), "select always uses the left button")
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return s.drag(ctx, d, from, to, b, time.Duration(dur)*time.Millisecond, sel)
		}

	case "wait":
		w, err := compileWait(st, at, bounds)
		if err != nil {
			return p, err
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			res, err := s.wait(ctx, d, w)
			if err == nil && !res.Met {
				return res, &platform.Error{Code: CodeWaitTimeout, Details: w.until,
					Message: fmt.Sprintf("wait: %s not met within %d ms", w.until, w.timeout.Milliseconds())}
			}
			return res, err
		}

	case "sleep":
		if st.DurationMS == nil {
			return p, platform.Invalid(f("duration_ms"), "is required")
		}
		ms := *st.DurationMS
		if ms < 0 || ms > maxTimeoutMS {
			return p, platform.Invalid(f("duration_ms"), "must be between 0 and %d", maxTimeoutMS)
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return map[string]int{"slept_ms": ms}, nil
			case <-ctx.Done():
				return nil, platform.Errorf(platform.CodeTimeout, "sleep interrupted: the request ended")
			}
		}

	case "focus-window", "raise-window", "minimize-window", "close-window":
		id := windowID()
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return s.windowAction(ctx, d, action, id)
		}

	case "move-window":
		x, y, err := pair("x", "y", st.X, st.Y, -16384, 32767)
		if err != nil {
			return p, err
		}
		p.run = onWindow(func(d Driver, wid uint32) (Window, error) { return d.Move(wid, Point{x, y}) })

	case "resize-window":
		w, h, err := pair("width", "height", st.Width, st.Height, 1, 16384)
		if err != nil {
			return p, err
		}
		p.run = onWindow(func(d Driver, wid uint32) (Window, error) { return d.Resize(wid, w, h) })

	case "clipboard":
		if st.Text == nil {
			return p, platform.Invalid(f("text"), "is required")
		}
		t := *st.Text
		if len(t) > maxClipboard {
			return p, platform.Invalid(f("text"), "must be at most %d bytes", maxClipboard)
		}
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) {
			return ClipboardView{Text: t}, d.SetClipboard(Clipboard{Text: t})
		}

	case "reset":
		p.run = func(ctx context.Context, s *Service, d Driver) (any, error) { return s.releaseAll(d) }

	default:
		return p, platform.Invalid(f("action"), "unknown action %q", st.Action).
			WithDetails("actions: move, move-relative, click, double-click, down, up, scroll, type, key, key-down, " +
				"key-up, click-at, type-at, drag, select, wait, sleep, focus-window, raise-window, minimize-window, " +
				"close-window, move-window, resize-window, clipboard, reset")
	}
	return p, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// onScreen is the off-screen rule: 400 OFF_SCREEN naming the field and the
// bounds.
func onScreen(xf, yf string, p Point, b Rect) error {
	field := ""
	switch {
	case p.X < b.X || p.X >= b.X+b.Width:
		field = xf
	case p.Y < b.Y || p.Y >= b.Y+b.Height:
		field = yf
	default:
		return nil
	}
	return &platform.Error{Code: CodeOffScreen, Field: field,
		Message: fmt.Sprintf("%s: (%d,%d) is off screen; the screen is %dx%d, x %d..%d, y %d..%d",
			field, p.X, p.Y, b.Width, b.Height, b.X, b.X+b.Width-1, b.Y, b.Y+b.Height-1),
		Details: fmt.Sprintf("bounds: x %d..%d, y %d..%d", b.X, b.X+b.Width-1, b.Y, b.Y+b.Height-1)}
}

// waitPlan is a validated wait.
type waitPlan struct {
	until   string
	name    *regexp.Regexp
	class   *regexp.Regexp
	pid     int
	region  Rect
	timeout time.Duration
}

func compileWait(st Step, at string, bounds Rect) (waitPlan, error) {
	f := func(name string) string { return at + name }
	w := waitPlan{until: strings.ReplaceAll(strings.ToLower(st.Until), "_", "-"), pid: st.PID, region: bounds}
	ms := st.TimeoutMS
	if ms == 0 {
		ms = 10000
	}
	if ms < 1 || ms > maxTimeoutMS {
		return w, platform.Invalid(f("timeout_ms"), "must be between 1 and %d", maxTimeoutMS)
	}
	w.timeout = time.Duration(ms) * time.Millisecond
	var err error
	switch w.until {
	case "window", "window-gone":
		if st.Name == "" && st.Class == "" && st.PID == 0 {
			return w, platform.Invalid(f("name"), "name, class or pid is required for until=%s", w.until)
		}
		if st.Name != "" {
			if w.name, err = regexp.Compile(st.Name); err != nil {
				return w, platform.Invalid(f("name"), "is not a valid regular expression: %s", reErr(err))
			}
		}
		if st.Class != "" {
			if w.class, err = regexp.Compile(st.Class); err != nil {
				return w, platform.Invalid(f("class"), "is not a valid regular expression: %s", reErr(err))
			}
		}
		if st.PID < 0 {
			return w, platform.Invalid(f("pid"), "must be positive")
		}
	case "region-change", "change", "screen-change":
		w.until = "region-change"
		if st.Region != nil {
			if err := regionOnScreen(at+"region.", *st.Region, bounds); err != nil {
				return w, err
			}
			w.region = *st.Region
		}
	case "timeout", "time", "sleep":
		w.until = "timeout"
	case "":
		return w, platform.Invalid(f("until"), "is required (window, window-gone, region-change or timeout)")
	default:
		return w, platform.Invalid(f("until"), "must be window, window-gone, region-change or timeout, got %q", st.Until)
	}
	return w, nil
}

func reErr(err error) string {
	s := err.Error()
	return strings.TrimPrefix(s, "error parsing regexp: ")
}

// regionOnScreen checks a region lies within the screen.
func regionOnScreen(at string, r Rect, b Rect) error {
	if r.Width < 1 {
		return platform.Invalid(at+"width", "must be at least 1")
	}
	if r.Height < 1 {
		return platform.Invalid(at+"height", "must be at least 1")
	}
	if err := onScreen(at+"x", at+"y", Point{r.X, r.Y}, b); err != nil {
		return err
	}
	if err := onScreen(at+"width", at+"height", Point{r.X + r.Width - 1, r.Y + r.Height - 1}, b); err != nil {
		return err
	}
	return nil
}
