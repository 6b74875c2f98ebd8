package api

import (
	"os"

	"github.com/spf13/pflag"

	"deckhand/display/recordings"
	"deckhand/platform"
	"deckhand/platform/config"
	"deckhand/platform/fault"
)

// Settings are the display service's flags, declared the same by the agent
// (`deckhand run`, `deckhand service display`) and by deckhand-display.
type Settings struct {
	// Display is the X display (:N); without one the service answers 503
	// DISPLAY_UNAVAILABLE and reports "unavailable".
	Display string
	// RecordingsMaxTotal bounds the bytes all kept screen recordings may
	// take together (Service.LimitRecordings).
	RecordingsMaxTotal int64
}

// DefaultRecordingsMaxTotal is --display-recordings-max-total's default.
const DefaultRecordingsMaxTotal = recordings.DefaultMaxTotal

// Flags declares --display (default $DISPLAY) and the recordings' bound.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Display, "display", os.Getenv("DISPLAY"), "X display for the display service (default $DISPLAY)")
	config.DocDefault(fs, "display", "`$DISPLAY`")
	fs.Int64Var(&s.RecordingsMaxTotal, "display-recordings-max-total", DefaultRecordingsMaxTotal,
		"bytes all kept screen recordings may take together: a new recording whose max_bytes would not fit beside the kept ones is refused (409) until some are deleted")
}

// Validate checks the bounds.
func (s *Settings) Validate() error {
	if s.RecordingsMaxTotal < 1<<20 {
		return fault.Invalid("--display-recordings-max-total", "must be at least 1048576 (the smallest max_bytes of a recording)")
	}
	return nil
}

// Info titles the display service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{Name: "display", Title: "deckhand display service", Version: platform.Version,
		Description: "Screenshots, mouse, keyboard, windows, clipboard and input batches on an X11 display. " +
			"Errors are {\"code\",\"details\",\"message\"}."}
}
