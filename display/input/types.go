package input

import (
	"deckhand/display/desktop"
)

// Geometry is a window's or the root's position and size.
type Geometry struct {
	ID     uint32 `json:"id,omitempty"`
	X      int    `json:"x" required:"true"`
	Y      int    `json:"y" required:"true"`
	Width  int    `json:"width" required:"true"`
	Height int    `json:"height" required:"true"`
}

// WindowName is GET .../window/{id}/name.
type WindowName struct {
	ID   uint32 `json:"id" required:"true"`
	Name string `json:"name" required:"true"`
}

// Closed answers window/close.
type Closed struct {
	ID     uint32 `json:"id" required:"true"`
	Closed bool   `json:"closed" required:"true" doc:"false when the window still exists after 2 s"`
}

// ClipboardView answers the clipboard endpoints.
type ClipboardView struct {
	Text     string   `json:"text" required:"true"`
	HasImage bool     `json:"has_image,omitempty"`
	Targets  []string `json:"targets,omitempty"`
}

// Typed answers the typing actions.
type Typed struct {
	X     *int `json:"x,omitempty"`
	Y     *int `json:"y,omitempty"`
	Typed int  `json:"typed" required:"true" doc:"characters typed"`
}

// KeyResult answers the key actions.
type KeyResult struct {
	Key       string   `json:"key" required:"true" doc:"canonical keysym name"`
	Modifiers []string `json:"modifiers,omitempty"`
}

// DragResult answers drag and select.
type DragResult struct {
	From desktop.Point `json:"from" required:"true"`
	To   desktop.Point `json:"to" required:"true"`
	Text *string       `json:"text,omitempty" doc:"select: the PRIMARY selection afterwards"`
}

// WaitResult answers wait.
type WaitResult struct {
	Met       bool            `json:"met" required:"true"`
	Until     string          `json:"until" required:"true"`
	ElapsedMS int64           `json:"elapsed_ms" required:"true"`
	Window    *desktop.Window `json:"window,omitempty" doc:"until=window: the first matching window"`
}

// Slept answers sleep.
type Slept struct {
	SleptMS int `json:"slept_ms" required:"true"`
}

// ResetResult answers input/reset.
type ResetResult struct {
	ReleasedKeys    []string `json:"released_keys" required:"true"`
	ReleasedButtons []string `json:"released_buttons" required:"true"`
}

// StepError is a failed step's error.
type StepError struct {
	Code    string `json:"code" required:"true"`
	Message string `json:"message" required:"true"`
	Details string `json:"details"`
}

// StepResult is one step's outcome.
type StepResult struct {
	Index      int        `json:"index" required:"true"`
	Action     string     `json:"action" required:"true"`
	OK         bool       `json:"ok" required:"true"`
	Result     any        `json:"result,omitempty"`
	Error      *StepError `json:"error,omitempty"`
	DurationMS float64    `json:"duration_ms" required:"true"`
}

// BatchResult answers input/batch.
type BatchResult struct {
	OK          bool         `json:"ok" required:"true" doc:"every step succeeded"`
	Total       int          `json:"total" required:"true"`
	Completed   int          `json:"completed" required:"true" doc:"steps that succeeded"`
	FailedIndex *int         `json:"failed_index,omitempty"`
	DurationMS  float64      `json:"duration_ms" required:"true"`
	Results     []StepResult `json:"results" required:"true" doc:"one per step that ran; steps after a failure do not run"`
}
