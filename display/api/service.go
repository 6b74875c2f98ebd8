// Package api is the display service as the agent and deckhand-display
// run it: one route table made of its concerns' (display/input, capture,
// accessibility, recordings, takeover, all over one display/core desk),
// its index, its flags and the "no display" variant. It talks to the
// desktop only through display/desktop's seam, so it builds without cgo:
// the agent links it to answer 503 DISPLAY_UNAVAILABLE on headless
// containers, and the deckhand-display binary (display/cmd) links it
// together with the X11 driver (display/x11) and the AT-SPI bus
// (display/atspi).
//
// Every route checks a request in one order: its own rules first
// (parameters and body, bound by the platform: 400 naming the field), then
// whether there is a display (503 DISPLAY_UNAVAILABLE), then what needs
// the screen (positions and regions on it: 400 OFF_SCREEN). A batch is
// compiled whole at the first stage, so a bad step is a 400 with or
// without a display.
package api

import (
	"deckhand/display/accessibility"
	"deckhand/display/capture"
	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/display/input"
	"deckhand/display/recordings"
	"deckhand/display/takeover"
	"deckhand/platform/contract"
)

// Service is the display service. Its driver can come and go (the X server
// starts after the service, or restarts): without one every display path
// answers 503 DISPLAY_UNAVAILABLE and HealthStatus says unavailable.
type Service struct {
	desk *core.Desk

	Capture       *capture.Service
	Input         *input.Service
	Accessibility *accessibility.Service
	Recordings    *recordings.Service
	Takeover      *takeover.Service
}

// New builds the service over drv (nil: unavailable until SetDriver).
func New(deps contract.ServiceDeps, drv desktop.Driver) *Service {
	desk := core.NewDesk(deps.Logger, deps.Clock)
	in := input.New(desk)
	s := &Service{desk: desk, Capture: capture.New(desk), Input: in, Accessibility: accessibility.New(desk, in),
		Recordings: recordings.New(desk, deps.DataDir), Takeover: takeover.New(desk)}
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
func (s *Service) SetDriver(d desktop.Driver) { s.desk.SetDriver(d) }

// SetUnavailable drops the driver (the caller closes it) and records why.
func (s *Service) SetUnavailable(reason string) { s.desk.SetUnavailable(reason) }

// SetAccessibility attaches the accessibility bus (nil: none).
func (s *Service) SetAccessibility(a desktop.Accessibility) { s.Accessibility.SetAccessibility(a) }

// LimitRecordings sets the bytes all kept recordings may take together
// (--display-recordings-max-total).
func (s *Service) LimitRecordings(total int64) { s.Recordings.LimitRecordings(total) }

// Driver returns the current driver, or nil.
func (s *Service) Driver() desktop.Driver { return s.desk.Driver() }

// HealthStatus is for platform.HostConfig.HealthStatus.
func (s *Service) HealthStatus() (string, string) {
	if s.desk.Driver() != nil {
		return "ok", ""
	}
	return "unavailable", s.desk.Reason()
}

// Close stops a running recording and the takeover's VNC servers and
// closes the driver and the accessibility bus.
func (s *Service) Close() error {
	s.Recordings.Close()
	s.Takeover.Close()
	_ = s.Accessibility.Close()
	if d := s.desk.Driver(); d != nil {
		s.desk.SetUnavailable("the display service closed")
		return d.Close()
	}
	return nil
}
