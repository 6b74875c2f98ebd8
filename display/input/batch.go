package input

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
	"deckhand/platform/openapi"
)

const maxBatch = 1000

// Step is one step of input/act and input/batch as JSON has it: "action"
// (a name or alias from the action table) and that action's body fields.
type Step json.RawMessage

// MarshalJSON writes the step as it was sent.
func (s Step) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return s, nil
}

// UnmarshalJSON keeps the step's JSON for compile.
func (s *Step) UnmarshalJSON(b []byte) error {
	*s = append((*s)[:0], b...)
	return nil
}

// JSONSchema documents a step: action and every field some action takes.
func (Step) JSONSchema() map[string]any { return openapi.Schema(reflect.Zero(stepDoc()).Interface()) }

// Act is input/act: one step in the batch format, compiled when it is
// bound.
type Act struct {
	Body Step
	plan plan
}

// Validate compiles the step.
func (a *Act) Validate() (err error) {
	a.plan, err = compile(a.Body, "")
	return err
}

// Batch is a list of steps, compiled when it is bound.
type Batch struct {
	Steps []Step `json:"steps" required:"true" doc:"at most 1000"`
	plans []plan
}

// Act runs one step in the batch format and answers its result.
func (s *Service) Act(ctx context.Context, in Act) (StepResult, error) {
	res, err := s.runOne(ctx, in.plan, true)
	r, _ := res.(StepResult)
	return r, err
}

// Validate checks the batch's shape and compiles every step (fields, key
// names, regular expressions) before any runs.
func (b *Batch) Validate() error {
	if b.Steps == nil {
		return fault.Invalid("steps", "is required")
	}
	if len(b.Steps) == 0 {
		return fault.Invalid("steps", "must hold at least one step")
	}
	if len(b.Steps) > maxBatch {
		return fault.Invalid("steps", "must hold at most %d steps, got %d", maxBatch, len(b.Steps))
	}
	b.plans = make([]plan, len(b.Steps))
	for i, st := range b.Steps {
		var err error
		if b.plans[i], err = compile(st, fmt.Sprintf("steps[%d].", i)); err != nil {
			return err
		}
	}
	return nil
}

// RunBatch validates and runs a batch as POST input/batch does: every step
// is checked (against the screen too) before any runs, then they run in
// order under the input lock.
func (s *Service) RunBatch(ctx context.Context, in Batch) (BatchResult, error) {
	if in.plans == nil {
		if err := in.Validate(); err != nil {
			return BatchResult{}, err
		}
	}
	d, err := s.desk.Current()
	if err != nil {
		return BatchResult{}, err
	}
	b, err := core.Bounds(d)
	if err != nil {
		return BatchResult{}, err
	}
	for i, p := range in.plans {
		if err := p.onScreen(b); err != nil {
			return BatchResult{}, inStep(fmt.Sprintf("steps[%d].", i), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, maxRequest)
	defer cancel()
	s.desk.Lock()
	defer s.desk.Unlock()
	if err := s.desk.Gate(); err != nil {
		return BatchResult{}, err
	}
	return s.runBatch(ctx, d, in.plans), nil
}

// clicker is a body that clicks somewhere (see clicking).
type clicker interface{ clicked() *desktop.Point }

func (s *Service) runBatch(ctx context.Context, d desktop.Driver, plans []plan) BatchResult {
	start := time.Now()
	out := BatchResult{OK: true, Total: len(plans), Results: make([]StepResult, 0, len(plans))}
	for i, p := range plans {
		t := time.Now()
		res, err := p.exec(env{ctx: ctx, s: s, d: d, step: true})
		s.desk.Timeline(p.name, p.body, nil, err)
		r := StepResult{Index: i, Action: p.name, OK: err == nil, Result: res, DurationMS: ms(time.Since(t))}
		if err != nil {
			e := fault.AsError(inStep(fmt.Sprintf("steps[%d].", i), err))
			if e.Code == fault.CodeInternal || e.Code == fault.CodeBackend {
				s.desk.Log.Error("display batch step failed", "index", i, "action", p.name, "err", err)
			}
			r.Error = &StepError{Code: e.Code, Message: e.Message, Details: e.Details}
			if e.Code != CodeWaitTimeout {
				r.Result = nil
			}
			out.OK = false
			out.FailedIndex = &i
			out.Results = append(out.Results, r)
			break
		}
		out.Completed++
		out.Results = append(out.Results, r)
		if c, ok := p.body.(clicker); ok && c.clicked() != nil && i+1 < len(plans) && plans[i+1].typing {
			s.awaitFocusAt(ctx, d, *c.clicked())
		}
	}
	out.DurationMS = ms(time.Since(start))
	return out
}
