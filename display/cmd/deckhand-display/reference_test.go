package main

import (
	"io"
	"testing"

	"deckhand/platform/config"
	"deckhand/platform/platformtest"
)

// The command-line reference in docs/reference/cli is generated from these
// flags; it must say what they are now.
func TestFlagReferenceIsCurrent(t *testing.T) {
	platformtest.Generated(t, "../../../docs/reference/cli/deckhand-display.md", config.Reference(newRoot(io.Discard, io.Discard)), "docs-flags")
}
