package servers_test

import (
	"testing"

	"deckhand/control/catalogtest"
)

// Every route is in the OpenAPI document (the servers routes declare no
// query parameters).
func TestRoutesDocumented(t *testing.T) {
	e := newEnv(t)
	catalogtest.Host(t, e.db, e.clock, e.svc.Routes())
}
