// Package x11 is the display service's driver for a real X server: input
// through XTest, windows through EWMH/ICCCM properties, capture through
// MIT-SHM into reused segments, JPEG through libjpeg-turbo (cgo) and PNG
// through a pure-Go encoder tuned for screens, and the clipboard through an
// owner window of its own. It speaks the X protocol with jezek/xgb rather
// than robotgo: xgb connections are goroutine-safe, name their display
// (--display :N) instead of reading one process-wide $DISPLAY, and answer
// with real window geometry and protocol errors instead of silently doing
// nothing.
//
// driver.go holds the Driver with the state of its parts (keyboard map,
// capture segments) and what needs nothing else; keyboard.go, capture.go,
// windows.go and selection.go act through it; open.go opens and closes it
// with its parts. The clipboard's owner (clipboard.go), the image encoders
// and the atom cache stand below all of them.
package x11

import "deckhand/display/desktop"

// Display is an open X display: the service's driver, and a signal for
// when the connection drops (the caller then reconnects).
type Display interface {
	desktop.Driver
	// Done is closed when the X connection is lost.
	Done() <-chan struct{}
}
