package input

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform"
	"deckhand/platform/fault"
)

// entry completes a table entry with the body, run and endpoint of run,
// which takes the action's own body type B and answers R: B's fields are
// the body, its Validate (and onScreen) the rules, R the answer.
func entry[B, R any](a action, run func(e env, b *B) (R, error)) *action {
	a.body = func() any { return new(B) }
	a.run = func(e env, b any) (any, error) { return run(e, b.(*B)) }
	ap := &a
	a.op = func(s *Service) platform.Operation {
		return platform.Op(func(ctx context.Context, b B) (R, error) {
			res, err := s.runOne(ctx, plan{action: ap, body: &b}, false)
			r, _ := res.(R)
			return r, err
		})
	}
	return ap
}

const windowBody = "id selects the window (default: the active one)."

// pointerText is how a pointer action's answer reads for a model.
const pointerText = "done; the pointer is at {{.x}},{{.y}}"

// actions is the table. Order is the order of the index and of the step
// schema's documentation.
var actions = []*action{
	entry(action{name: "move", aliases: []string{"mouse-move", "move-to"}, path: "/mouse/move",
		summary: "Move the pointer", description: "Off-screen coordinates are 400 OFF_SCREEN with the bounds.",
		tool: &platform.Tool{Name: "display_move", Title: "Move the pointer",
			Description: "Move the pointer to x,y (screen pixels) without clicking (hover).", Text: pointerText, Destructive: true}},
		func(e env, b *MouseMove) (desktop.Point, error) {
			if err := e.d.MoveTo(*b.at); err != nil {
				return desktop.Point{}, err
			}
			return e.d.Pointer() // where the server put it (a grab may confine it)
		}),
	entry(action{name: "move-relative", path: "/mouse/move-relative", summary: "Move the pointer by dx,dy",
		description: "The destination must be on screen."},
		func(e env, b *MouseMoveRelative) (desktop.Point, error) {
			cur, err := e.d.Pointer()
			if err != nil {
				return desktop.Point{}, err
			}
			to := desktop.Point{X: cur.X + b.dx, Y: cur.Y + b.dy}
			if err := core.OnScreen("dx", "dy", to, b.screen); err != nil {
				return desktop.Point{}, err
			}
			if err := e.d.MoveTo(to); err != nil {
				return desktop.Point{}, err
			}
			return e.d.Pointer()
		}),
	entry(action{name: "click", aliases: []string{"left-click"}, path: "/mouse/click", summary: "Click",
		description: "Moves to x,y when given (both or neither), then clicks button (left, right, middle; " +
			"default left) clicks times (1-3). Answers the pointer position.",
		tool: &platform.Tool{Name: "display_click", Title: "Click",
			Description: "Move the pointer to x,y (screen pixels) and click a button (left by default); without x,y click where the pointer is.", Text: pointerText, Destructive: true}},
		func(e env, b *MouseClick) (desktop.Point, error) { return e.s.click(e.d, b.at, b.button, b.clicks) }),
	entry(action{name: "double-click", aliases: []string{"doubleclick"}, path: "/mouse/double-click",
		summary: "Double-click", description: "As click, twice.",
		tool: &platform.Tool{Name: "display_double_click", Title: "Double-click",
			Description: "Move the pointer to x,y (screen pixels) and double-click.", Text: pointerText, Destructive: true}},
		func(e env, b *MouseClick) (desktop.Point, error) { return e.s.click(e.d, b.at, b.button, 2) }),
	entry(action{name: "down", aliases: []string{"mouse-down"}, path: "/mouse/down",
		summary: "Press a button and keep it down", description: "Moves to x,y first when given. Held until " +
			"mouse/up or input/reset."},
		func(e env, b *MouseButton) (desktop.Point, error) { return e.s.press(e.d, b.at, b.button, true) }),
	entry(action{name: "up", aliases: []string{"mouse-up"}, path: "/mouse/up", summary: "Release a button"},
		func(e env, b *MouseButton) (desktop.Point, error) { return e.s.press(e.d, b.at, b.button, false) }),
	entry(action{name: "scroll", path: "/mouse/scroll", summary: "Scroll the wheel",
		description: "direction up, down (default), left or right, amount notches (1-100, default 1), at x,y " +
			"when given.",
		tool: &platform.Tool{Name: "display_scroll", Title: "Scroll",
			Description: "Turn the mouse wheel amount notches in a direction, at x,y when given.", Text: pointerText, Destructive: true}},
		func(e env, b *MouseScroll) (desktop.Point, error) { return e.s.click(e.d, b.at, b.wheel, b.amount) }),
	entry(action{name: "type", aliases: []string{"type-text"}, path: "/keyboard/type", summary: "Type text",
		description: "Types Unicode text as key presses (characters the keymap lacks are bound to a spare " +
			"keycode for the moment). delay_ms (0-1000, default 0) waits between characters. At most 20000 " +
			"characters.", typing: true,
		tool: &platform.Tool{Name: "display_type", Title: "Type text",
			Description: "Type text into the focused window as key presses (any Unicode). Click the field first to focus it.",
			Text:        "typed {{.typed}} characters", Destructive: true}},
		func(e env, b *KeyboardType) (Typed, error) {
			n, err := e.s.typeText(e.ctx, e.d, b.text, b.delay)
			return Typed{Typed: n}, err
		}),
	entry(action{name: "key", aliases: []string{"press"}, path: "/keyboard/key", summary: "Press a key or chord",
		description: "key is an X keysym name (Return, Page_Up, F5), an alias (enter, esc, ctrl, cmd, ArrowUp) " +
			"or one character; \"ctrl+shift+t\" chords work too. modifiers are held around it. repeat presses " +
			"it 1-100 times. An unknown name is 400 listing close matches.", typing: true,
		tool: &platform.Tool{Name: "display_key", Title: "Press a key",
			Description: "Press a key or chord in the focused window: Return, Escape, Tab, ctrl+c, alt+F4, ctrl+shift+t.",
			Text:        "pressed {{arg \"key\"}}", Destructive: true}},
		func(e env, b *KeyboardKey) (KeyResult, error) {
			res := KeyResult{Key: desktop.KeyName(b.sym)}
			for _, m := range b.mods {
				res.Modifiers = append(res.Modifiers, desktop.KeyName(m))
			}
			return res, e.s.chord(e.d, b.sym, b.mods, b.repeat)
		}),
	entry(action{name: "key-down", path: "/keyboard/key-down", summary: "Press a key and keep it down",
		description: "Held until key-up or input/reset.", typing: true},
		func(e env, b *KeyboardKeyOnly) (KeyResult, error) {
			return KeyResult{Key: desktop.KeyName(b.sym)}, e.s.key(e.d, b.sym, true)
		}),
	entry(action{name: "key-up", path: "/keyboard/key-up", summary: "Release a key"},
		func(e env, b *KeyboardKeyOnly) (KeyResult, error) {
			return KeyResult{Key: desktop.KeyName(b.sym)}, e.s.key(e.d, b.sym, false)
		}),
	entry(action{name: "click-at", path: "/input/click-at", summary: "Move and click",
		description: "x and y are required."},
		func(e env, b *ClickAt) (desktop.Point, error) { return e.s.click(e.d, b.at, b.button, b.clicks) }),
	entry(action{name: "type-at", path: "/input/type-at", summary: "Click a spot, then type",
		description: "Clicks x,y, optionally clears the field (ctrl+a, Delete) and types text."},
		func(e env, b *TypeAt) (Typed, error) { return e.s.typeAt(e.ctx, e.d, *b.at, b.Clear, b.typing) }),
	entry(action{name: "drag", path: "/input/drag", summary: "Drag from one point to another",
		description: "Presses button (default left) at from, moves to to in steps over duration_ms (0-10000, " +
			"default 100), releases.",
		tool: &platform.Tool{Name: "display_drag", Title: "Drag",
			Description: "Press a button at from (screen pixels), move to to and release it.",
			Text:        "done; the pointer is at {{.to.x}},{{.to.y}}", Destructive: true}},
		func(e env, b *Drag) (DragResult, error) {
			return e.s.drag(e.ctx, e.d, *b.From, *b.To, b.button, b.duration, false)
		}),
	entry(action{name: "select", path: "/input/select", summary: "Select by dragging, answer the selection",
		description: "A left-button drag from from to to; answers the PRIMARY selection's text afterwards " +
			"(what the application selected)."},
		func(e env, b *Select) (DragResult, error) {
			return e.s.drag(e.ctx, e.d, *b.From, *b.To, desktop.ButtonLeft, b.duration, true)
		}),
	entry(action{name: "wait", path: "/input/wait", summary: "Wait for a window, a screen change or a time",
		description: "until: window (a window matching name/class/pid appears), window-gone (none is left), " +
			"region-change (the pixels of region, default the whole screen, change), or timeout (just wait). " +
			"timeout_ms 1-300000, default 10000. Answers met=false when the time ran out (a batch step fails " +
			"then with WAIT_TIMEOUT).", unlocked: true},
		func(e env, b *Wait) (WaitResult, error) {
			res, err := e.s.wait(e.ctx, e.d, b)
			if err == nil && !res.Met && e.step {
				return res, &fault.Error{Code: CodeWaitTimeout, Details: b.until,
					Message: fmt.Sprintf("wait: %s not met within %d ms", b.until, b.timeout.Milliseconds())}
			}
			return res, err
		}),
	entry(action{name: "sleep", path: "/input/sleep", summary: "Wait a fixed time",
		description: "Sleeps duration_ms (0-300000), for pauses between batch steps.",
		unlocked:    true},
		func(e env, b *Sleep) (Slept, error) {
			if err := sleep(e.ctx, time.Duration(*b.DurationMS)*time.Millisecond); err != nil {
				return Slept{}, fault.Errorf(fault.CodeTimeout, "sleep interrupted: the request ended")
			}
			return Slept{SleptMS: *b.DurationMS}, nil
		}),
	entry(action{name: "focus-window", aliases: []string{"focus"}, path: "/window/focus",
		summary: "Focus (activate) a window", description: "Raises, de-iconifies and activates it through the " +
			"window manager. " + windowBody},
		thenWindow(desktop.Driver.Focus)),
	entry(action{name: "raise-window", aliases: []string{"raise"}, path: "/window/raise", summary: "Raise a window",
		description: "Puts it on top of the stack without focusing it. " + windowBody},
		thenWindow(desktop.Driver.Raise)),
	entry(action{name: "minimize-window", aliases: []string{"minimize"}, path: "/window/minimize",
		summary: "Minimize (iconify) a window", description: windowBody},
		thenWindow(desktop.Driver.Minimize)),
	entry(action{name: "close-window", aliases: []string{"close"}, path: "/window/close", summary: "Close a window",
		description: "Asks politely (_NET_CLOSE_WINDOW / WM_DELETE_WINDOW) and answers closed=true once it is " +
			"gone, closed=false when it is still there after 2 s. " + windowBody},
		onWindow(func(e env, wid uint32, _ *WindowRef) (Closed, error) { return e.s.closeWindow(e.ctx, e.d, wid) })),
	entry(action{name: "move-window", path: "/window/move", summary: "Move a window",
		description: "Places the window's client area at x,y (root coordinates) and answers its geometry once " +
			"the window manager has moved it. " + windowBody},
		onWindow(func(e env, wid uint32, b *WindowMove) (desktop.Window, error) {
			return e.d.Move(wid, desktop.Point{X: *b.X, Y: *b.Y})
		})),
	entry(action{name: "resize-window", path: "/window/resize", summary: "Resize a window",
		description: "Sets the client area's size (1-16384). " + windowBody},
		onWindow(func(e env, wid uint32, b *WindowResize) (desktop.Window, error) {
			return e.d.Resize(wid, *b.Width, *b.Height)
		})),
	entry(action{name: "clipboard", aliases: []string{"clipboard-set", "set-clipboard"}, path: "/clipboard",
		summary: "Set the clipboard", description: "Takes ownership of CLIPBOARD with text, or with an image " +
			"(image_base64 and mime_type, image/png by default). The service keeps serving it until something " +
			"else takes the clipboard. Answers {\"text\"} as GET would.", unlocked: true},
		func(e env, b *ClipboardSet) (ClipboardView, error) {
			return ClipboardView{Text: b.clip.Text, HasImage: len(b.clip.Image) > 0}, e.d.SetClipboard(b.clip)
		}),
	entry(action{name: "reset", path: "/input/reset", summary: "Release every held key and button",
		description: "Releases what this service pressed and everything the X server reports down."},
		func(e env, _ *noBody) (ResetResult, error) { return e.s.releaseAll(e.d) }),
}

// windowed is a body that names a window (nil: the active one).
type windowed interface{ window() *uint32 }

func (r *WindowRef) window() *uint32    { return r.ID }
func (r *WindowMove) window() *uint32   { return r.ID }
func (r *WindowResize) window() *uint32 { return r.ID }

// onWindow runs do on the body's window, the active one when it names none.
func onWindow[B, R any, P interface {
	*B
	windowed
}](do func(e env, wid uint32, b P) (R, error)) func(env, P) (R, error) {
	return func(e env, b P) (R, error) {
		wid, err := e.s.resolveWindow(e.d, b.window())
		if err != nil {
			var zero R
			return zero, err
		}
		return do(e, wid, b)
	}
}

// thenWindow runs do on the body's window and answers the window
// afterwards.
func thenWindow(do func(d desktop.Driver, id uint32) error) func(env, *WindowRef) (desktop.Window, error) {
	return onWindow(func(e env, wid uint32, _ *WindowRef) (desktop.Window, error) {
		if err := do(e.d, wid); err != nil {
			return desktop.Window{}, err
		}
		return e.d.Window(wid)
	})
}

// byName finds an action by name or alias; "_" and "-" are one.
var byName = sync.OnceValue(func() map[string]*action {
	m := map[string]*action{}
	for _, a := range actions {
		m[a.name] = a
		for _, alias := range a.aliases {
			m[alias] = a
		}
	}
	return m
})

func lookup(name string) *action {
	return byName()[strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", "-"))]
}

// actionNames lists the actions, then their aliases.
func actionNames() string {
	var names, aliases []string
	for _, a := range actions {
		names = append(names, a.name)
		for _, alias := range a.aliases {
			aliases = append(aliases, alias+" ("+a.name+")")
		}
	}
	return strings.Join(names, ", ") + "; aliases: " + strings.Join(aliases, ", ") + "; underscores work too"
}

// Actions are the action table's endpoints.
func (s *Service) Actions() []platform.Route {
	out := make([]platform.Route, 0, len(actions))
	for _, a := range actions {
		out = append(out, platform.Route{Method: http.MethodPost, Path: core.Prefix + a.path, Summary: a.summary,
			Description: a.description, Tags: []string{"display"}, Op: a.op(s), Tool: a.tool})
	}
	return out
}

// Click clicks the left button once at at, as the click action does: the
// lock, the gate and the timeline included.
func (s *Service) Click(ctx context.Context, at desktop.Point) error {
	_, err := s.runOne(ctx, plan{action: lookup("click"), body: &MouseClick{clicking: clicking{spot: spot{at: &at},
		button: desktop.ButtonLeft, clicks: 1}}}, false)
	return err
}

// compile decodes and validates one step, {"action": name, ...that
// action's fields}: fields, key names and regular expressions (the screen
// bounds come later, with the display); at is what field names start
// with ("steps[3]." in a batch).
func compile(raw []byte, at string) (plan, error) {
	var fields map[string]json.RawMessage
	if err := platform.DecodeBytes(raw, &fields); err != nil {
		return plan{}, inStep(at, err)
	}
	if fields == nil {
		return plan{}, inStep(at, fault.Invalid("body", "must be an object"))
	}
	key := "action"
	for k := range fields {
		if strings.EqualFold(k, "action") && fields[key] == nil {
			key = k // JSON field names match case-insensitively
		}
	}
	var name string
	if v, ok := fields[key]; !ok || string(v) == "null" {
		return plan{}, fault.Invalid(at+"action", "is required")
	} else if err := json.Unmarshal(v, &name); err != nil {
		return plan{}, fault.Invalid(at+"action", "must be a string")
	}
	if strings.TrimSpace(name) == "" {
		return plan{}, fault.Invalid(at+"action", "is required")
	}
	a := lookup(name)
	if a == nil {
		return plan{}, fault.Invalid(at+"action", "unknown action %q", name).WithDetails("actions: %s", actionNames())
	}
	delete(fields, key)
	rest, err := json.Marshal(fields)
	if err != nil {
		return plan{}, fault.Internal("read a step", err)
	}
	p, err := a.decodeBody(rest)
	return p, inStep(at, err)
}

// inStep names a step's field as the batch sees it: "x" becomes
// "steps[3].x" and the step itself "steps[3]".
func inStep(at string, err error) error {
	var e *fault.Error
	if at == "" || !errors.As(err, &e) || e.Field == "" {
		return err
	}
	name := at + e.Field
	if e.Field == "body" {
		name = strings.TrimSuffix(at, ".")
	}
	c := *e
	c.Field = name
	if rest, ok := strings.CutPrefix(e.Message, e.Field); ok {
		c.Message = name + rest
	}
	if e.Details == e.Field {
		c.Details = name
	}
	return &c
}

// stepDoc is the OpenAPI shape of a step: action and every field some
// action takes, each documented with the actions that take it. It is built
// from the table so a new action documents itself.
var stepDoc = sync.OnceValue(func() reflect.Type {
	fields := []reflect.StructField{{Name: "Action", Type: reflect.TypeOf(""),
		Tag: reflect.StructTag(fmt.Sprintf(`json:"action" required:"true" doc:%q`, actionNames()))}}
	// per field, the actions that take it grouped by their doc for it
	type group struct {
		doc     string
		actions []string
	}
	var groups [][]group
	index := map[string]int{}
	for _, a := range actions {
		for _, f := range reflect.VisibleFields(reflect.TypeOf(a.body()).Elem()) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || f.Anonymous || name == "" || name == "-" {
				continue
			}
			i, seen := index[name]
			if !seen {
				i = len(groups)
				index[name] = i
				tag := fmt.Sprintf(`json:"%s,omitempty"`, name)
				if e := f.Tag.Get("enum"); e != "" {
					tag += fmt.Sprintf(` enum:%q`, e)
				}
				fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: f.Type,
					Tag: reflect.StructTag(tag)})
				groups = append(groups, nil)
			}
			doc, j := f.Tag.Get("doc"), 0
			for j < len(groups[i]) && groups[i][j].doc != doc {
				j++
			}
			if j == len(groups[i]) {
				groups[i] = append(groups[i], group{doc: doc})
			}
			groups[i][j].actions = append(groups[i][j].actions, a.name)
		}
	}
	for i, g := range groups {
		var parts []string
		for _, grp := range g {
			part := strings.Join(grp.actions, ", ")
			if grp.doc != "" {
				part += ": " + grp.doc
			}
			parts = append(parts, part)
		}
		fields[i+1].Tag += reflect.StructTag(fmt.Sprintf(` doc:%q`, "for "+strings.Join(parts, "; ")))
	}
	return reflect.StructOf(fields)
})
