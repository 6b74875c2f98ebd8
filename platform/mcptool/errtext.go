package mcptool

import (
	"context"
	"errors"

	"deckhand/platform/fault"
)

// ErrorText is what a tool answers for err: the code and the message,
// never a Go error's internals for an unknown error.
func ErrorText(err error) string {
	var pe *fault.Error
	if errors.As(err, &pe) {
		s := pe.Code + ": " + pe.Message
		if pe.Details != "" {
			s += " (" + pe.Details + ")"
		}
		return s
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "CANCELLED: the call was cancelled"
	}
	return "ERROR: " + err.Error()
}
