package api

// Endpoint bodies. Each decodes strictly (unknown fields are 400) and turns
// into the batch Step it stands for, so an endpoint and the same action in a
// batch are validated and run by one piece of code.

type stepper interface{ step() Step }

// WindowRef selects a window; without id, the active one.
type WindowRef struct {
	ID *uint32 `json:"id" doc:"X window id; default the active window"`
}

// WindowMove moves a window.
type WindowMove struct {
	ID *uint32 `json:"id"`
	X  *int    `json:"x" required:"true"`
	Y  *int    `json:"y" required:"true"`
}

// WindowResize resizes a window.
type WindowResize struct {
	ID     *uint32 `json:"id"`
	Width  *int    `json:"width" required:"true"`
	Height *int    `json:"height" required:"true"`
}

// WindowSearch finds windows.
type WindowSearch struct {
	Name  string `json:"name,omitempty" doc:"regular expression on the title"`
	Class string `json:"class,omitempty" doc:"regular expression on WM_CLASS (instance or class)"`
	PID   int    `json:"pid,omitempty"`
}

// MouseClick clicks, optionally somewhere first.
type MouseClick struct {
	X      *int   `json:"x"`
	Y      *int   `json:"y"`
	Button string `json:"button,omitempty" enum:"left,right,middle"`
	Clicks int    `json:"clicks,omitempty" doc:"1-3, default 1 (click only)"`
}

// MouseMoveRelative moves by an offset.
type MouseMoveRelative struct {
	DX int `json:"dx"`
	DY int `json:"dy"`
}

// MouseButton presses or releases a button.
type MouseButton struct {
	X      *int   `json:"x"`
	Y      *int   `json:"y"`
	Button string `json:"button,omitempty" enum:"left,right,middle"`
}

// MouseScroll turns the wheel.
type MouseScroll struct {
	X         *int   `json:"x"`
	Y         *int   `json:"y"`
	Direction string `json:"direction,omitempty" enum:"up,down,left,right"`
	Amount    int    `json:"amount,omitempty" doc:"notches 1-100, default 1"`
}

// KeyboardType types text.
type KeyboardType struct {
	Text    *string `json:"text" required:"true"`
	DelayMS int     `json:"delay_ms,omitempty"`
}

// KeyboardKey presses a key or chord.
type KeyboardKey struct {
	Key       string   `json:"key" required:"true"`
	Modifiers []string `json:"modifiers,omitempty" doc:"ctrl, shift, alt, super (cmd, win, meta) or any key name"`
	Repeat    int      `json:"repeat,omitempty" doc:"1-100, default 1"`
}

// KeyboardKeyOnly names one key.
type KeyboardKeyOnly struct {
	Key string `json:"key" required:"true"`
}

// ClickAt clicks at a point.
type ClickAt struct {
	X      *int   `json:"x" required:"true"`
	Y      *int   `json:"y" required:"true"`
	Button string `json:"button,omitempty" enum:"left,right,middle"`
	Clicks int    `json:"clicks,omitempty"`
}

// TypeAt clicks at a point and types.
type TypeAt struct {
	X       *int    `json:"x" required:"true"`
	Y       *int    `json:"y" required:"true"`
	Text    *string `json:"text" required:"true"`
	DelayMS int     `json:"delay_ms,omitempty"`
	Clear   bool    `json:"clear,omitempty" doc:"select all (ctrl+a) and delete before typing"`
}

// Drag drags (or selects) from one point to another.
type Drag struct {
	From       *Point `json:"from" required:"true"`
	To         *Point `json:"to" required:"true"`
	Button     string `json:"button,omitempty" enum:"left,right,middle"`
	DurationMS *int   `json:"duration_ms,omitempty" doc:"0-10000, default 100"`
}

// Wait waits for a condition.
type Wait struct {
	Until     string `json:"until" required:"true" enum:"window,window-gone,region-change,timeout"`
	Name      string `json:"name,omitempty"`
	Class     string `json:"class,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Region    *Rect  `json:"region,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// Batch is a list of steps.
type Batch struct {
	Steps []Step `json:"steps" required:"true"`
}

func (r WindowRef) step() Step    { return Step{ID: r.ID} }
func (r WindowMove) step() Step   { return Step{ID: r.ID, X: r.X, Y: r.Y} }
func (r WindowResize) step() Step { return Step{ID: r.ID, Width: r.Width, Height: r.Height} }
func (r MouseClick) step() Step {
	return Step{X: r.X, Y: r.Y, Button: r.Button, Clicks: r.Clicks}
}
func (r MouseMoveRelative) step() Step { return Step{DX: &r.DX, DY: &r.DY} }
func (r MouseButton) step() Step       { return Step{X: r.X, Y: r.Y, Button: r.Button} }
func (r MouseScroll) step() Step {
	return Step{X: r.X, Y: r.Y, Direction: r.Direction, Amount: r.Amount}
}
func (r KeyboardType) step() Step { return Step{Text: r.Text, DelayMS: r.DelayMS} }
func (r KeyboardKey) step() Step  { return Step{Key: r.Key, Modifiers: r.Modifiers, Repeat: r.Repeat} }
func (r KeyboardKeyOnly) step() Step {
	return Step{Key: r.Key}
}
func (r ClickAt) step() Step { return Step{X: r.X, Y: r.Y, Button: r.Button, Clicks: r.Clicks} }
func (r TypeAt) step() Step {
	return Step{X: r.X, Y: r.Y, Text: r.Text, DelayMS: r.DelayMS, Clear: r.Clear}
}
func (r Drag) step() Step {
	return Step{From: r.From, To: r.To, Button: r.Button, DurationMS: r.DurationMS}
}
func (r Wait) step() Step {
	return Step{Until: r.Until, Name: r.Name, Class: r.Class, PID: r.PID, Region: r.Region, TimeoutMS: r.TimeoutMS}
}

// bodies maps an endpoint's action to its body type.
var bodies = map[string]func() stepper{
	"focus-window":    func() stepper { return &WindowRef{} },
	"raise-window":    func() stepper { return &WindowRef{} },
	"minimize-window": func() stepper { return &WindowRef{} },
	"close-window":    func() stepper { return &WindowRef{} },
	"move-window":     func() stepper { return &WindowMove{} },
	"resize-window":   func() stepper { return &WindowResize{} },
	"click":           func() stepper { return &MouseClick{} },
	"double-click":    func() stepper { return &MouseClick{} },
	"move":            func() stepper { return &pointBody{} },
	"move-relative":   func() stepper { return &MouseMoveRelative{} },
	"down":            func() stepper { return &MouseButton{} },
	"up":              func() stepper { return &MouseButton{} },
	"scroll":          func() stepper { return &MouseScroll{} },
	"type":            func() stepper { return &KeyboardType{} },
	"key":             func() stepper { return &KeyboardKey{} },
	"key-down":        func() stepper { return &KeyboardKeyOnly{} },
	"key-up":          func() stepper { return &KeyboardKeyOnly{} },
	"click-at":        func() stepper { return &ClickAt{} },
	"type-at":         func() stepper { return &TypeAt{} },
	"drag":            func() stepper { return &Drag{} },
	"select":          func() stepper { return &Drag{} },
}

// pointBody is {"x","y"} with both required (mouse/move).
type pointBody struct {
	X *int `json:"x"`
	Y *int `json:"y"`
}

func (p pointBody) step() Step { return Step{X: p.X, Y: p.Y} }
