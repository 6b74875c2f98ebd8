package images_test

import (
	"testing"

	"deckhand/control/catalogtest"
	"deckhand/platform/platformtest"
)

// Every route is documented, and every declared query parameter refuses
// the values that break its rules with a 400 naming it.
func TestRoutesDocumentedAndQueriesChecked(t *testing.T) {
	e := newEnv(t)
	h := catalogtest.Host(t, e.db, e.clock, e.svc.Routes())
	if n := platformtest.CheckQueryValidation(t, h); n < 20 {
		t.Fatalf("only %d bad queries sent", n)
	}
}
