package wallet_test

import (
	"deckhand/platform/auth"
	"github.com/gofiber/fiber/v3"
	"path/filepath"
	"testing"

	"deckhand/control/wallet"
	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
)

// Every route is documented, and every declared query parameter refuses
// the values that break its rules with a 400 naming it.
func TestRoutesDocumentedAndQueriesChecked(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := newFixture(t, db, wallet.Config{TransferFeeBPS: 500})
	anyone := platform.AuthenticatorFunc(func(fiber.Ctx) (*auth.Principal, error) {
		return &auth.Principal{UserID: "u", Role: auth.RoleUser, Kind: auth.KindSession}, nil
	})
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "wallet"}, Auth: anyone}, f.w.Routes())
	platformtest.CheckRoutesDocumented(t, h)
	if n := platformtest.CheckQueryValidation(t, h); n < 10 {
		t.Fatalf("only %d bad queries sent", n)
	}
}
