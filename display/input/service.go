// Package input is the display service's input engine and the desktop
// state it acts on: the action table (actions.go), whose entries are at
// once endpoints and steps of input/act and input/batch, the windows and
// the clipboard. Everything that presses holds the desk's input lock and
// passes its gate (a person who took over refuses the agent's input), and
// every action is told to the desk's timeline.
//
// Its files lie in layers, each using only those below it: service.go
// (the Service) and types.go (the answers); requests.go (the action
// bodies and their checks); operations.go (what presses, keeping account
// of what is held) and plan.go (a checked step, run alone); actions.go
// (the table); batch.go (input/act and input/batch); windows.go and
// windowlist.go (the windows and the clipboard); routes.go (the routes).
package input

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/platform/fault"
)

// CodeWaitTimeout: a wait step's condition was not met in time.
const CodeWaitTimeout = "WAIT_TIMEOUT"

func init() {
	fault.RegisterCode(CodeWaitTimeout, http.StatusRequestTimeout)
}

// Service is the input engine over a desk.
type Service struct {
	desk *core.Desk
	// held is what this service pressed and has not released (for
	// reset); the desk's input lock guards it.
	held held
}

type held struct {
	keys    map[desktop.Keysym]int
	buttons map[desktop.Button]bool
}

// New is the input engine over desk.
func New(desk *core.Desk) *Service {
	return &Service{desk: desk, held: held{keys: map[desktop.Keysym]int{}, buttons: map[desktop.Button]bool{}}}
}
