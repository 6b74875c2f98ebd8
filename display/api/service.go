// Package api owns the display service's HTTP surface: its one route table,
// request validation, the input engine (the action table in actions.go,
// whose entries are at once endpoints and act/batch steps) and the "no
// display" variant. It talks to the desktop only through Driver, so it
// builds without cgo: the agent links it to answer 503 DISPLAY_UNAVAILABLE on
// headless containers, and the deckhand-display binary (display/cmd) links it
// together with the X11 driver (display/x11).
//
// Every route checks a request in one order: its own rules first
// (parameters and body, bound by the platform: 400 naming the field), then
// whether there is a display (503 DISPLAY_UNAVAILABLE), then what needs
// the screen (positions and regions on it: 400 OFF_SCREEN). A batch is
// compiled whole at the first stage, so a bad step is a 400 with or
// without a display.
package api

import (
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// Codes this service adds to the platform's.
const (
	CodeDisplayUnavailable = "DISPLAY_UNAVAILABLE"
	CodeOffScreen          = "OFF_SCREEN"
	CodeWaitTimeout        = "WAIT_TIMEOUT"
)

func init() {
	fault.RegisterCode(CodeDisplayUnavailable, http.StatusServiceUnavailable)
	fault.RegisterCode(CodeOffScreen, http.StatusBadRequest)
	fault.RegisterCode(CodeWaitTimeout, http.StatusRequestTimeout)
}

const prefix = "/api/v1/display"

// Service is the display service. Its driver can come and go (the X server
// starts after the service, or restarts): without one every display path
// answers 503 DISPLAY_UNAVAILABLE and HealthStatus says unavailable.
type Service struct {
	log   *slog.Logger
	clock clockpkg.Clock
	drv   atomic.Pointer[driverBox]
	a11y  atomic.Pointer[a11yBox]

	dataDir string // the service's own directory ("" for none)
	recOnce sync.Once
	rec     atomic.Pointer[recorder]
	recMax  atomic.Int64 // bytes all kept recordings may take (LimitRecordings)
	take    takeover
	reason  atomic.Pointer[string]

	// input serialises everything that presses, moves or types, so one
	// client's batch is never interleaved with another's clicks; held is
	// what this service pressed and has not released (for reset).
	input sync.Mutex
	held  held
}

type driverBox struct{ d Driver }

type held struct {
	keys    map[Keysym]int
	buttons map[Button]bool
}

// New builds the service over drv (nil: unavailable until SetDriver).
func New(deps contract.ServiceDeps, drv Driver) *Service {
	s := &Service{log: deps.Logger, clock: deps.Clock, dataDir: deps.DataDir}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.clock == nil {
		s.clock = clockpkg.SystemClock{}
	}
	s.held = held{keys: map[Keysym]int{}, buttons: map[Button]bool{}}
	s.recMax.Store(DefaultRecordingsMaxTotal)
	reason := "no X display is configured (set --display or DISPLAY)"
	s.reason.Store(&reason)
	if drv != nil {
		s.SetDriver(drv)
	}
	return s
}

// NewUnavailable serves the same route table, every display path answering
// 503 DISPLAY_UNAVAILABLE with reason, and health "unavailable".
func NewUnavailable(reason string) *Service {
	s := New(contract.ServiceDeps{}, nil)
	s.SetUnavailable(reason)
	return s
}

// SetDriver makes the display available through d.
func (s *Service) SetDriver(d Driver) {
	s.drv.Store(&driverBox{d: d})
}

// SetUnavailable drops the driver (the caller closes it) and records why.
func (s *Service) SetUnavailable(reason string) {
	s.reason.Store(&reason)
	s.drv.Store(nil)
}

// Driver returns the current driver, or nil.
func (s *Service) Driver() Driver {
	if b := s.drv.Load(); b != nil {
		return b.d
	}
	return nil
}

// HealthStatus is for platform.HostConfig.HealthStatus.
func (s *Service) HealthStatus() (string, string) {
	if s.Driver() != nil {
		return "ok", ""
	}
	return "unavailable", *s.reason.Load()
}

// Close stops a running recording and the takeover's VNC servers and
// closes the driver and the accessibility bus.
func (s *Service) Close() error {
	s.closeRecordings()
	s.closeTakeover()
	if b := s.a11y.Swap(nil); b != nil && b.a != nil {
		_ = b.a.Close()
	}
	if d := s.Driver(); d != nil {
		s.drv.Store(nil)
		return d.Close()
	}
	return nil
}

func (s *Service) driver() (Driver, error) {
	if d := s.Driver(); d != nil {
		return d, nil
	}
	return nil, &fault.Error{Code: CodeDisplayUnavailable,
		Message: "the display service has no X display: " + *s.reason.Load(),
		Details: "start an X server (for example scripts/xvfb.sh) and give the agent --display :N"}
}
