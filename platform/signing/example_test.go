package signing_test

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"deckhand/platform/signing"
)

// A client of the control plane verifies every response: the verifier
// fetches the key set once, caches it for 24 hours and re-fetches when a
// response names a kid it does not know (after a `keys rotate`).
func ExampleVerifier() {
	base := "http://127.0.0.1:8080"
	v := signing.NewVerifier(signing.VerifierOptions{
		Source:     signing.HTTPKeySource(nil, base),
		MinRefetch: 10 * time.Second, // forged kids cannot make it hammer the server
	})
	resp, err := http.Get(base + "/api/v1/auth/available-regions")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if _, err := v.VerifyResponse(resp, body); err != nil {
		fmt.Println("reject:", err)
		return
	}
	fmt.Println("verified")
}
