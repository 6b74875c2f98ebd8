package input

import (
	"cmp"
	"encoding/base64"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// Action bodies. Each decodes strictly (unknown fields are 400), checks the
// rules that need no screen in Validate (the binder calls it) and, when
// it holds positions, those that do in onScreen. Both keep what they parsed
// in unexported fields for the action's run, so an endpoint and the same
// action in a batch are checked and run by one piece of code. Field names in
// their errors are the body's own; a batch puts "steps[i]." in front.

const (
	maxText      = 20000
	maxTimeoutMS = 300000
)

// screenBound is a body with positions that must lie on the screen.
type screenBound interface {
	onScreen(screen desktop.Rect) error
}

// MouseMove moves the pointer.
type MouseMove struct {
	X *int `json:"x" required:"true"`
	Y *int `json:"y" required:"true"`
	spot
}

// MouseMoveRelative moves the pointer by an offset.
type MouseMoveRelative struct {
	DX *int `json:"dx" doc:"dx or dy is required"`
	DY *int `json:"dy"`

	dx, dy int
	screen desktop.Rect
}

// MouseClick clicks, optionally somewhere first.
type MouseClick struct {
	X      *int   `json:"x"`
	Y      *int   `json:"y"`
	Button string `json:"button,omitempty" enum:"left,right,middle"`
	Clicks int    `json:"clicks,omitempty" doc:"1-3, default 1 (click only)"`
	clicking
}

// ClickAt clicks at a point.
type ClickAt struct {
	X      *int   `json:"x" required:"true"`
	Y      *int   `json:"y" required:"true"`
	Button string `json:"button,omitempty" enum:"left,right,middle"`
	Clicks int    `json:"clicks,omitempty" doc:"1-3, default 1"`
	clicking
}

// MouseButton presses or releases a button.
type MouseButton struct {
	X      *int   `json:"x"`
	Y      *int   `json:"y"`
	Button string `json:"button,omitempty" enum:"left,right,middle"`
	spot
	button desktop.Button
}

// MouseScroll turns the wheel.
type MouseScroll struct {
	X         *int   `json:"x"`
	Y         *int   `json:"y"`
	Direction string `json:"direction,omitempty" enum:"up,down,left,right"`
	Amount    int    `json:"amount,omitempty" doc:"notches 1-100, default 1"`
	spot
	wheel  desktop.Button
	amount int
}

// KeyboardType types text.
type KeyboardType struct {
	Text    *string `json:"text" required:"true"`
	DelayMS int     `json:"delay_ms,omitempty" doc:"0-1000, default 0"`
	typing
}

// TypeAt clicks at a point and types.
type TypeAt struct {
	X       *int    `json:"x" required:"true"`
	Y       *int    `json:"y" required:"true"`
	Text    *string `json:"text" required:"true"`
	DelayMS int     `json:"delay_ms,omitempty" doc:"0-1000, default 0"`
	Clear   bool    `json:"clear,omitempty" doc:"select all (ctrl+a) and delete before typing"`
	spot
	typing
}

// KeyboardKey presses a key or chord.
type KeyboardKey struct {
	Key       string   `json:"key" required:"true"`
	Modifiers []string `json:"modifiers,omitempty" doc:"ctrl, shift, alt, super (cmd, win, meta) or any key name"`
	Repeat    int      `json:"repeat,omitempty" doc:"1-100, default 1"`

	sym    desktop.Keysym
	mods   []desktop.Keysym
	repeat int
}

// KeyboardKeyOnly names one key.
type KeyboardKeyOnly struct {
	Key string `json:"key" required:"true"`
	sym desktop.Keysym
}

// Drag drags from one point to another.
type Drag struct {
	From       *desktop.Point `json:"from" required:"true"`
	To         *desktop.Point `json:"to" required:"true"`
	Button     string         `json:"button,omitempty" enum:"left,right,middle"`
	DurationMS *int           `json:"duration_ms,omitempty" doc:"0-10000, default 100"`

	button   desktop.Button
	duration time.Duration
}

// Select is a left-button drag that answers the selection.
type Select struct{ Drag }

// Wait waits for a condition.
type Wait struct {
	Until     string        `json:"until" required:"true" enum:"window,window-gone,region-change,timeout"`
	Name      string        `json:"name,omitempty" doc:"regular expression on the title"`
	Class     string        `json:"class,omitempty" doc:"regular expression on WM_CLASS (instance or class)"`
	PID       int           `json:"pid,omitempty"`
	Region    *desktop.Rect `json:"region,omitempty" doc:"region-change: default the whole screen"`
	TimeoutMS int           `json:"timeout_ms,omitempty" doc:"1-300000, default 10000"`

	until   string
	match   windowMatch
	region  desktop.Rect
	timeout time.Duration
}

// Sleep waits a fixed time.
type Sleep struct {
	DurationMS *int `json:"duration_ms" required:"true" doc:"0-300000"`
}

// WindowRef selects a window; without id, the active one.
type WindowRef struct {
	ID *uint32 `json:"id" doc:"X window id; default the active window"`
}

// WindowMove moves a window.
type WindowMove struct {
	ID *uint32 `json:"id" doc:"X window id; default the active window"`
	X  *int    `json:"x" required:"true"`
	Y  *int    `json:"y" required:"true"`
}

// WindowResize resizes a window.
type WindowResize struct {
	ID     *uint32 `json:"id" doc:"X window id; default the active window"`
	Width  *int    `json:"width" required:"true"`
	Height *int    `json:"height" required:"true"`
}

const maxClipboard = 16 << 20

// ClipboardSet is POST .../clipboard: text, or an image.
type ClipboardSet struct {
	Text        *string `json:"text"`
	ImageBase64 string  `json:"image_base64,omitempty" doc:"base64 image bytes instead of text"`
	MIMEType    string  `json:"mime_type,omitempty" doc:"the image's type, default image/png"`
	clip        desktop.Clipboard
}

// noBody is the body of an action that takes no fields.
type noBody struct{}

// WindowSearch finds windows (window/search; not an action).
type WindowSearch struct {
	Name  string `json:"name,omitempty" doc:"regular expression on the title"`
	Class string `json:"class,omitempty" doc:"regular expression on WM_CLASS (instance or class)"`
	PID   int    `json:"pid,omitempty"`
	match windowMatch
}

// spot is a validated position (nil: where the pointer is).
type spot struct{ at *desktop.Point }

func (p *spot) onScreen(screen desktop.Rect) error {
	if p.at == nil {
		return nil
	}
	return core.OnScreen("x", "y", *p.at, screen)
}

// place reads x and y into the spot: both or neither, both when required.
func (p *spot) place(x, y *int, required bool) error {
	switch {
	case x == nil && y == nil:
		if required {
			return fault.Invalid("x", "is required")
		}
		return nil
	case x == nil:
		return fault.Invalid("x", "is required when y is given")
	case y == nil:
		return fault.Invalid("y", "is required when x is given")
	}
	p.at = &desktop.Point{X: *x, Y: *y}
	return nil
}

// clicking is a validated click: where, which button, how often.
type clicking struct {
	spot
	button desktop.Button
	clicks int
}

func (k *clicking) read(x, y *int, required bool, button string, clicks int) (err error) {
	if err = k.place(x, y, required); err != nil {
		return err
	}
	if k.button, err = parseButton(button); err != nil {
		return err
	}
	k.clicks, err = times("clicks", clicks, 3)
	return err
}

// clicked is where the click lands (nil: where the pointer is); a typing
// step after it in a batch waits for the window manager to focus there.
func (k *clicking) clicked() *desktop.Point { return k.at }

// typing is validated text to type.
type typing struct {
	text  string
	delay time.Duration
}

func (t *typing) read(text *string, delayMS int) error {
	if text == nil {
		return fault.Invalid("text", "is required")
	}
	if n := utf8.RuneCountInString(*text); n > maxText {
		return fault.Invalid("text", "must be at most %d characters, got %d", maxText, n)
	}
	if !utf8.ValidString(*text) {
		return fault.Invalid("text", "must be valid UTF-8")
	}
	for i, r := range []rune(*text) {
		if (r < 0x20 && r != '\n' && r != '\r' && r != '\t') || r == 0x7f {
			return fault.Invalid("text", "has control character U+%04X at character %d; "+
				"send control keys with the key action (\"ctrl+c\", \"BackSpace\")", r, i)
		}
	}
	if delayMS < 0 || delayMS > 1000 {
		return fault.Invalid("delay_ms", "must be between 0 and 1000")
	}
	if n := utf8.RuneCountInString(*text); n*delayMS > maxTimeoutMS {
		return fault.Invalid("delay_ms", "times the text length must stay under %d ms", maxTimeoutMS)
	}
	t.text, t.delay = *text, time.Duration(delayMS)*time.Millisecond
	return nil
}

func parseButton(v string) (desktop.Button, error) {
	switch strings.ToLower(v) {
	case "", "left", "1":
		return desktop.ButtonLeft, nil
	case "middle", "2":
		return desktop.ButtonMiddle, nil
	case "right", "3":
		return desktop.ButtonRight, nil
	}
	return 0, fault.Invalid("button", "must be left, right or middle, got %q", v)
}

// times is a repeat count: 0 means once, else 1 to hi.
func times(field string, v, hi int) (int, error) {
	if v == 0 {
		return 1, nil
	}
	if v < 1 || v > hi {
		return 0, fault.Invalid(field, "must be between 1 and %d", hi)
	}
	return v, nil
}

// pair checks two required integer fields (both must be given before
// either is range-checked) that must each lie in lo..hi.
func pair(af, bf string, a, b *int, lo, hi int) error {
	if a == nil {
		return fault.Invalid(af, "is required")
	}
	if b == nil {
		return fault.Invalid(bf, "is required")
	}
	for _, c := range []struct {
		name string
		v    int
	}{{af, *a}, {bf, *b}} {
		if c.v < lo || c.v > hi {
			return fault.Invalid(c.name, "must be between %d and %d", lo, hi)
		}
	}
	return nil
}

// Validate requires x and y.
func (r *MouseMove) Validate() error { return r.place(r.X, r.Y, true) }

// Validate requires an offset.
func (r *MouseMoveRelative) Validate() error {
	if r.DX == nil && r.DY == nil {
		return fault.Invalid("dx", "dx or dy is required")
	}
	r.dx, r.dy = deref(r.DX), deref(r.DY)
	return nil
}

// onScreen keeps the screen: the destination depends on where the pointer
// is when the step runs.
func (r *MouseMoveRelative) onScreen(screen desktop.Rect) error {
	r.screen = screen
	return nil
}

// Validate checks the position, button and count.
func (r *MouseClick) Validate() error { return r.read(r.X, r.Y, false, r.Button, r.Clicks) }

// Validate checks the position, button and count.
func (r *ClickAt) Validate() error { return r.read(r.X, r.Y, true, r.Button, r.Clicks) }

// Validate checks the position and button.
func (r *MouseButton) Validate() (err error) {
	if err = r.place(r.X, r.Y, false); err != nil {
		return err
	}
	r.button, err = parseButton(r.Button)
	return err
}

// Validate checks the position, direction and amount.
func (r *MouseScroll) Validate() (err error) {
	if err = r.place(r.X, r.Y, false); err != nil {
		return err
	}
	switch strings.ToLower(r.Direction) {
	case "", "down":
		r.wheel = desktop.ButtonWheelDown
	case "up":
		r.wheel = desktop.ButtonWheelUp
	case "left":
		r.wheel = desktop.ButtonWheelLeft
	case "right":
		r.wheel = desktop.ButtonWheelRight
	default:
		return fault.Invalid("direction", "must be up, down, left or right, got %q", r.Direction)
	}
	r.amount, err = times("amount", r.Amount, 100)
	return err
}

// Validate checks the text and delay.
func (r *KeyboardType) Validate() error { return r.read(r.Text, r.DelayMS) }

// Validate checks the position, text and delay.
func (r *TypeAt) Validate() error {
	if err := r.place(r.X, r.Y, true); err != nil {
		return err
	}
	return r.read(r.Text, r.DelayMS)
}

// Validate resolves the key, modifiers and count.
func (r *KeyboardKey) Validate() (err error) {
	if r.sym, r.mods, err = desktop.ParseChord("key", r.Key, r.Modifiers); err != nil {
		return err
	}
	r.repeat, err = times("repeat", r.Repeat, 100)
	return err
}

// Validate resolves the key.
func (r *KeyboardKeyOnly) Validate() (err error) {
	r.sym, err = desktop.ParseKey("key", r.Key)
	return err
}

// Validate checks the ends, button and duration.
func (r *Drag) Validate() (err error) {
	if r.From == nil {
		return fault.Invalid("from", "is required")
	}
	if r.To == nil {
		return fault.Invalid("to", "is required")
	}
	if r.button, err = parseButton(r.Button); err != nil {
		return err
	}
	dur := 100
	if r.DurationMS != nil {
		dur = *r.DurationMS
	}
	if dur < 0 || dur > 10000 {
		return fault.Invalid("duration_ms", "must be between 0 and 10000")
	}
	r.duration = time.Duration(dur) * time.Millisecond
	return nil
}

func (r *Drag) onScreen(screen desktop.Rect) error {
	if err := core.OnScreen("from.x", "from.y", *r.From, screen); err != nil {
		return err
	}
	return core.OnScreen("to.x", "to.y", *r.To, screen)
}

// Validate is Drag's, with the left button only.
func (r *Select) Validate() error {
	if err := r.Drag.Validate(); err != nil {
		return err
	}
	if r.Button != "" && r.button != desktop.ButtonLeft {
		return fault.Invalid("button", "select always uses the left button")
	}
	return nil
}

// Validate checks the condition, its criteria and the timeout.
func (r *Wait) Validate() (err error) {
	r.until = strings.ReplaceAll(strings.ToLower(r.Until), "_", "-")
	ms := cmp.Or(r.TimeoutMS, 10000)
	if ms < 1 || ms > maxTimeoutMS {
		return fault.Invalid("timeout_ms", "must be between 1 and %d", maxTimeoutMS)
	}
	r.timeout = time.Duration(ms) * time.Millisecond
	switch r.until {
	case "window", "window-gone":
		if r.Name == "" && r.Class == "" && r.PID == 0 {
			return fault.Invalid("name", "name, class or pid is required for until=%s", r.until)
		}
		r.match, err = compileMatch(r.Name, r.Class, r.PID)
		return err
	case "region-change", "change", "screen-change":
		r.until = "region-change"
	case "timeout", "time", "sleep":
		r.until = "timeout"
	case "":
		return fault.Invalid("until", "is required (window, window-gone, region-change or timeout)")
	default:
		return fault.Invalid("until", "must be window, window-gone, region-change or timeout, got %q", r.Until)
	}
	return nil
}

// onScreen checks the region (default: the whole screen).
func (r *Wait) onScreen(screen desktop.Rect) error {
	r.region = screen
	if r.until != "region-change" || r.Region == nil {
		return nil
	}
	if err := core.RegionOnScreen("region.", *r.Region, screen); err != nil {
		return err
	}
	r.region = *r.Region
	return nil
}

// Validate checks the duration.
func (r *Sleep) Validate() error {
	if r.DurationMS == nil {
		return fault.Invalid("duration_ms", "is required")
	}
	if ms := *r.DurationMS; ms < 0 || ms > maxTimeoutMS {
		return fault.Invalid("duration_ms", "must be between 0 and %d", maxTimeoutMS)
	}
	return nil
}

// Validate checks the position's range.
func (r *WindowMove) Validate() error { return pair("x", "y", r.X, r.Y, -16384, 32767) }

// Validate checks the size's range.
func (r *WindowResize) Validate() error { return pair("width", "height", r.Width, r.Height, 1, 16384) }

// Validate requires text or an image, not both, and decodes the image.
func (r *ClipboardSet) Validate() error {
	switch {
	case r.Text == nil && r.ImageBase64 == "":
		return fault.Invalid("text", "is required (or image_base64)")
	case r.Text != nil && r.ImageBase64 != "":
		return fault.Invalid("image_base64", "cannot be combined with text")
	case r.Text != nil && len(*r.Text) > maxClipboard:
		return fault.Invalid("text", "must be at most %d bytes", maxClipboard)
	case r.Text == nil && r.MIMEType != "" && !strings.HasPrefix(r.MIMEType, "image/"):
		return fault.Invalid("mime_type", "must be an image/* type")
	}
	if r.Text != nil {
		r.clip = desktop.Clipboard{Text: *r.Text}
		return nil
	}
	img, err := base64.StdEncoding.DecodeString(r.ImageBase64)
	if err != nil {
		return fault.Invalid("image_base64", "must be standard base64")
	}
	if len(img) > maxClipboard {
		return fault.Invalid("image_base64", "must decode to at most %d bytes", maxClipboard)
	}
	r.clip = desktop.Clipboard{Image: img, MIME: cmp.Or(r.MIMEType, "image/png")}
	return nil
}

// Validate requires one criterion and valid regular expressions.
func (r *WindowSearch) Validate() (err error) {
	if r.Name == "" && r.Class == "" && r.PID == 0 {
		return fault.Invalid("name", "name, class or pid is required")
	}
	r.match, err = compileMatch(r.Name, r.Class, r.PID)
	return err
}

// windowMatch is a validated window criterion (wait, window/search).
type windowMatch struct {
	name, class *regexp.Regexp
	pid         int
}

func compileMatch(name, class string, pid int) (windowMatch, error) {
	m := windowMatch{pid: pid}
	if pid < 0 {
		return m, fault.Invalid("pid", "must be positive")
	}
	var err error
	if name != "" {
		if m.name, err = regexp.Compile(name); err != nil {
			return m, fault.Invalid("name", "is not a valid regular expression: %s", reErr(err))
		}
	}
	if class != "" {
		if m.class, err = regexp.Compile(class); err != nil {
			return m, fault.Invalid("class", "is not a valid regular expression: %s", reErr(err))
		}
	}
	return m, nil
}

func (m windowMatch) matches(d desktop.Driver, win desktop.Window) bool {
	if m.pid != 0 && win.PID != m.pid {
		return false
	}
	if m.name != nil && !m.name.MatchString(win.Name) {
		return false
	}
	if m.class != nil {
		p, err := d.WindowProperties(win.ID)
		if err != nil || !(m.class.MatchString(p.Class) || m.class.MatchString(p.Instance)) {
			return false
		}
	}
	return true
}

func reErr(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
