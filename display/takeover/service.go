// Package takeover is the display's human takeover: a person watches or
// drives the desktop in the browser (noVNC) through the service, and the
// agent can pause itself for them. While a person drives or the agent is
// paused, the desk's gate refuses the agent's input (409 TAKEN_OVER).
package takeover

import (
	"net/http"
	"os/exec"
	"sync"
	"time"

	"deckhand/display/core"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// CodeTakenOver: a person drives the desktop, or the agent paused.
const CodeTakenOver = "TAKEN_OVER"

func init() {
	fault.RegisterCode(CodeTakenOver, http.StatusConflict)
}

// Service is the takeover over a desk.
type Service struct {
	desk *core.Desk
	take takeover
}

// New is the takeover over desk; it becomes the desk's gate.
func New(desk *core.Desk) *Service {
	s := &Service{desk: desk}
	desk.SetGate(s.takenOver)
	return s
}

// takeover holds the VNC servers (x11vnc children, one per mode, on unix
// sockets in a private directory: no TCP port at all) and who drives.
type takeover struct {
	startMu sync.Mutex
	mu      sync.Mutex
	dir     string
	servers map[string]*vncServer // by mode
	spawner *proc.Spawner
	paused  bool
	reason  string
	since   time.Time
	drivers int
	viewers int
}

type vncServer struct {
	cmd  *exec.Cmd
	sock string
	done chan struct{}
}

// takenOver refuses the agent's input while a person drives or the agent
// paused.
func (s *Service) takenOver() error {
	t := &s.take
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.drivers > 0:
		return fault.Errorf(CodeTakenOver, "a person is driving the desktop through the takeover view; input waits until they leave").
			WithDetails("GET /api/v1/display/takeover")
	case t.paused:
		return fault.Errorf(CodeTakenOver, "the agent paused for a person (%s); resume with DELETE /api/v1/display/takeover", t.reason).
			WithDetails("GET /api/v1/display/takeover")
	}
	return nil
}
