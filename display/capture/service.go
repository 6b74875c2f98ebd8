// Package capture is what the display service sees of the screen: its
// size and monitors, and screenshots of it or of a region (PNG or JPEG,
// scaled, with the pointer drawn in on request).
package capture

import "deckhand/display/core"

// Service answers the screen's pictures over a desk.
type Service struct{ desk *core.Desk }

// New is the capture over desk.
func New(desk *core.Desk) *Service { return &Service{desk: desk} }
