package storetest_test

import (
	"testing"

	"deckhand/platform/store/storetest"
)

// TestContract holds every engine to the store contract. bbolt's "other
// replica" is the same handle (one process opens a file once); PostgreSQL's
// is a second pool on the same database.
func TestContract(t *testing.T) {
	for _, e := range storetest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, e.Open)
		})
	}
}
