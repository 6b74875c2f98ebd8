package main

import (
	"testing"

	"deckhand/platform/config"
	"deckhand/platform/platformtest"
)

// The command-line reference in docs/reference/cli is generated from these
// flags; it must say what they are now.
func TestFlagReferenceIsCurrent(t *testing.T) {
	platformtest.Generated(t, "../../../docs/reference/cli/deckhand.md", config.Reference(root()), "docs-flags")
}
