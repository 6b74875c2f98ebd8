package servers_test

import (
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/platformtest"
)

// Every route is documented (the servers routes declare no query
// parameters).
func TestRoutesDocumentedAndQueriesChecked(t *testing.T) {
	e := newEnv(t)
	anyone := platform.AuthenticatorFunc(func(fiber.Ctx) (*auth.Principal, error) {
		return &auth.Principal{UserID: "u", Role: auth.RoleUser, Kind: auth.KindSession}, nil
	})
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "servers"}, Auth: anyone,
		Limiter: platform.NewStoreLimiter(e.db, e.clock)}, e.svc.Routes())
	platformtest.CheckRoutesDocumented(t, h)
}
