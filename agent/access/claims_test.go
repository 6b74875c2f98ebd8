package access_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"deckhand/agent/access"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/platformtest"
	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
)

// signedPlane answers the agent's two questions (the key set and the
// effective document) with the real KeySet and Signer of the control
// plane, on the test's clock.
func signedPlane(t *testing.T, ks *signing.KeySet, clock clockpkg.Clock, doc string) *httptest.Server {
	t.Helper()
	return signedPlaneOf(t, ks, clock, func() string { return doc })
}

// signedPlaneOf is signedPlane answering the document doc returns now.
func signedPlaneOf(t *testing.T, ks *signing.KeySet, clock clockpkg.Clock, doc func() string) *httptest.Server {
	t.Helper()
	signer := signing.NewSigner(ks, clock)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		switch {
		case r.URL.Path == signing.PublicKeyPath:
			raw, _ := json.Marshal(map[string]any{"data": ks.PublicSet()})
			body = raw
		case strings.HasSuffix(r.URL.Path, "/proxy/permissions/effective"):
			body = []byte(`{"statusCode":200,"message":"ok","data":` + doc() + `}`)
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set(signing.Header, signer.Sign(r.URL.Path, body))
		if n := r.Header.Get(signing.NonceHeader); n != "" {
			w.Header().Set(signing.BindingHeader, signer.SignBinding(signing.Binding{Status: 200, Method: r.Method,
				Path: r.URL.EscapedPath(), Nonce: n, Body: body}))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newKeySet(t *testing.T) *signing.KeySet { return platformtest.SigningKeys(t) }

// TestContainerClaimsAtTheGateway: the gateway of c2 admits c1's claim
// for c2 while it lasts, and refuses an expired claim, one for another
// audience, one of another container, a tampered one and one whose kid
// the control plane does not know.
func TestContainerClaimsAtTheGateway(t *testing.T) {
	t.Parallel()
	ks, stranger := newKeySet(t), newKeySet(t)
	clock := clockpkg.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	doc := `{"project":"p1","container":"c2","groups":{"peers":{"type":"service-identity","containers":["c1"]}},
		"permissions":{"peers":{"services":true}}}`
	cp := signedPlane(t, ks, clock, doc)
	a, err := access.New(access.Config{ControlURL: cp.URL, ContainerID: "c2", Token: "agt_test", Journal: &journal{}, Clock: clock,
		Port: func(string) int { return 7701 }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	mint := func(k *signing.KeySet, container, aud string, ttl time.Duration) string {
		iat := clock.Now()
		c, err := k.Issue(proxyperm.ContainerClaim{Type: "container", Container: container, Project: "p1", Audience: aud,
			IssuedAt: iat.Unix(), Expires: iat.Add(ttl).Unix()}, iat, iat.Add(ttl))
		if err != nil {
			t.Fatal(err)
		}
		return c.Value
	}
	const outside = "203.0.113.9"
	get := func(claim string) int {
		return status(a, "notes", outside, map[string]string{proxyperm.ClaimHeader: claim})
	}

	good := mint(ks, "c1", "c2", 5*time.Minute)
	if st := get(good); st != 200 {
		t.Fatalf("c1's claim for c2: %d", st)
	}
	tampered := []byte(good)
	tampered[3] ^= 0x01
	parts := strings.Split(good, ".")
	sig, _ := hex.DecodeString(parts[1])
	sig[0] ^= 0x01
	for _, c := range []struct {
		name, claim string
	}{
		{"wrong audience", mint(ks, "c1", "c3", 5*time.Minute)},
		{"other container", mint(ks, "c9", "c2", 5*time.Minute)},
		{"tampered payload", string(tampered)},
		{"tampered signature", parts[0] + "." + hex.EncodeToString(sig) + "." + parts[2]},
		{"unknown kid", mint(stranger, "c1", "c2", 5*time.Minute)},
		{"known kid, other key's signature", strings.Join(append(strings.Split(mint(stranger, "c1", "c2", 5*time.Minute), ".")[:2], parts[2]), ".")},
	} {
		if st := get(c.claim); st != 401 {
			t.Errorf("%s: %d, want 401", c.name, st)
		}
	}
	// Expiry: the same claim, 5 min 31 s later (past exp and the skew).
	clock.Advance(5*time.Minute + 31*time.Second)
	if st := get(good); st != 401 {
		t.Fatalf("expired claim: %d", st)
	}
	if st := get(mint(ks, "c1", "c2", 5*time.Minute)); st != 200 {
		t.Fatalf("a fresh claim after the old one expired: %d", st)
	}
}
