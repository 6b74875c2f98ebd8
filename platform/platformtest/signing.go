package platformtest

import (
	"testing"

	"deckhand/platform/secrets"
	"deckhand/platform/signing"
)

// SigningKeys is a fresh signing key set in a temporary directory, sealed
// under a random master key: a test's own control-plane keys.
func SigningKeys(t testing.TB) *signing.KeySet {
	t.Helper()
	sealer, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	ks, err := signing.Open(t.TempDir(), sealer)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}
