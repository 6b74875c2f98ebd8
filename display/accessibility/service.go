// Package accessibility is the display service's view of the desktop
// through the accessibility bus (AT-SPI2, display/atspi): the tree of the
// active window or of every application, a search, actions on one
// element by its id, and the screenshot with a numbered box on each
// interactive element. An element without an action of its own is
// clicked through the input engine, so the lock, the takeover's gate and
// the timeline apply to it as to any click.
package accessibility

import (
	"sync/atomic"

	"deckhand/display/core"
	"deckhand/display/desktop"
	"deckhand/display/input"
	"deckhand/platform/fault"
)

// Service acts on the desktop's accessible elements.
type Service struct {
	desk  *core.Desk
	input *input.Service
	a11y  atomic.Pointer[a11yBox]
}

// New is the accessibility view of desk; in clicks what has no click
// action of its own.
func New(desk *core.Desk, in *input.Service) *Service { return &Service{desk: desk, input: in} }

// Close closes the accessibility bus.
func (s *Service) Close() error {
	if b := s.a11y.Swap(nil); b != nil && b.a != nil {
		return b.a.Close()
	}
	return nil
}

// SetAccessibility attaches the accessibility bus (nil: none).
func (s *Service) SetAccessibility(a desktop.Accessibility) {
	if a == nil {
		s.a11y.Store(nil)
		return
	}
	s.a11y.Store(&a11yBox{a: a})
}

type a11yBox struct{ a desktop.Accessibility }

func (s *Service) accessibility() (desktop.Accessibility, error) {
	if b := s.a11y.Load(); b != nil && b.a != nil {
		return b.a, nil
	}
	return nil, &fault.Error{Code: desktop.CodeNoAccessibility, Message: "the display service has no accessibility bus",
		Details: "it needs the session D-Bus (DBUS_SESSION_BUS_ADDRESS) with at-spi2-core, or AT_SPI_BUS_ADDRESS"}
}
