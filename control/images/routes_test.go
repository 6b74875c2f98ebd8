package images_test

import (
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/platformtest"
)

// Every route is documented, and every declared query parameter refuses
// the values that break its rules with a 400 naming it.
func TestRoutesDocumentedAndQueriesChecked(t *testing.T) {
	e := newEnv(t)
	anyone := platform.AuthenticatorFunc(func(fiber.Ctx) (*auth.Principal, error) {
		return &auth.Principal{UserID: "u", Role: auth.RoleUser, Kind: auth.KindSession}, nil
	})
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "images"}, Auth: anyone,
		Limiter: platform.NewStoreLimiter(e.db, e.clock)}, e.svc.Routes())
	platformtest.CheckRoutesDocumented(t, h)
	if n := platformtest.CheckQueryValidation(t, h); n < 20 {
		t.Fatalf("only %d bad queries sent", n)
	}
}
