//go:build !(linux && cgo)

package x11

import (
	"errors"
	"log/slog"
)

// Open fails: this build has no X11 driver (it needs Linux and cgo for
// libjpeg-turbo; build deckhand-display with CGO_ENABLED=1).
func Open(display string, log *slog.Logger) (Display, error) {
	return nil, errors.New("deckhand-display was built without cgo: no X11 driver")
}

// Available reports whether this build has the X11 driver.
const Available = false
