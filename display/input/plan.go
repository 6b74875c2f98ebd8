package input

import (
	"context"
	"time"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform"
)

// action is one thing the input engine does: a step of input/act and
// input/batch, and its own POST endpoint. The table in actions.go is the
// only place an action is named: its route, its OpenAPI entry, the batch
// step's schema and the step's name and aliases all come from it.
type action struct {
	name        string   // what steps say and results report
	aliases     []string // other names a step may use
	path        string   // its endpoint, under /api/v1/display
	summary     string
	description string
	// unlocked runs its endpoint without the input lock: it presses
	// nothing, so other clients' input need not wait for it (in a batch
	// every step holds the lock)
	unlocked bool
	// typing presses keys where the focus is: after a click step a batch
	// first lets the window manager focus the clicked window
	typing bool
	// tool, when set, makes the action's endpoint an MCP tool too
	tool *platform.Tool
	body func() any // a new, empty body
	run  func(e env, body any) (any, error)
	// op is the action's own endpoint on s: its body type bound by the
	// platform, its result type the answer.
	op func(s *Service) platform.Operation
}

// env is where an action runs.
type env struct {
	ctx context.Context
	s   *Service
	d   desktop.Driver
	// step is true in input/act and input/batch, where a wait that runs
	// out fails the step; its endpoint answers met=false instead
	step bool
}

// plan is a step whose body is decoded and checked, ready to run once it
// is checked against the screen (onScreen).
type plan struct {
	*action
	body any
}

// decodeBody decodes raw into a's body and checks its rules that need no
// screen.
func (a *action) decodeBody(raw []byte) (plan, error) {
	body := a.body()
	if err := platform.DecodeBytes(raw, body); err != nil {
		return plan{}, err
	}
	return plan{action: a, body: body}, nil
}

// onScreen checks the positions the step holds against the screen.
func (p plan) onScreen(screen desktop.Rect) error {
	if b, ok := p.body.(screenBound); ok {
		return b.onScreen(screen)
	}
	return nil
}

// maxRequest bounds how long one act or batch may run.
const maxRequest = 10 * time.Minute

// runOne runs a checked step alone, in the order every display route
// keeps: its request was checked when it was bound (400), then the
// display must be there (503), then its positions must lie on the screen
// (400 OFF_SCREEN). It holds the input lock unless its action presses
// nothing. step says it runs as a step (input/act, which answers a
// StepResult whose duration is the run's, not the wait for the lock).
func (s *Service) runOne(ctx context.Context, p plan, step bool) (any, error) {
	d, err := s.desk.Current()
	if err != nil {
		return nil, err
	}
	screen, err := core.Bounds(d)
	if err != nil {
		return nil, err
	}
	if err := p.onScreen(screen); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, maxRequest)
	defer cancel()
	if !p.unlocked {
		s.desk.Lock()
		defer s.desk.Unlock()
		if err := s.desk.Gate(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	res, err := p.exec(env{ctx: ctx, s: s, d: d, step: step})
	s.desk.Timeline(p.name, p.body, nil, err)
	if err != nil || !step {
		return res, err
	}
	return StepResult{Action: p.name, OK: true, Result: res, DurationMS: ms(time.Since(start))}, nil
}

// exec runs the step and waits until the server has processed its input,
// so an answer means "done", not "sent".
func (p plan) exec(e env) (any, error) {
	res, err := p.run(e, p.body)
	if serr := e.d.Sync(); err == nil {
		err = serr
	}
	return res, err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
