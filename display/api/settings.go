package api

import (
	"os"

	"github.com/spf13/pflag"

	"deckhand/platform"
)

// Settings are the display service's flags, declared the same by the agent
// (`deckhand run`, `deckhand service display`) and by deckhand-display.
type Settings struct {
	// Display is the X display (:N); without one the service answers 503
	// DISPLAY_UNAVAILABLE and reports "unavailable".
	Display string
}

// Flags declares --display (default $DISPLAY).
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Display, "display", os.Getenv("DISPLAY"), "X display for the display service (default $DISPLAY)")
}

// Info titles the display service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{Name: "display", Title: "deckhand display service", Version: platform.Version,
		Description: "Screenshots, mouse, keyboard, windows, clipboard and input batches on an X11 display. " +
			"Errors are {\"code\",\"details\",\"message\"}."}
}
