package projectse2e_test

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"deckhand/platform/proxyperm"
	"deckhand/platform/signing"
)

// keySet reads the published key set and returns the active key.
func (s *server) activeKey(t *testing.T) (string, ed25519.PublicKey, signing.PublicKeySet) {
	t.Helper()
	r := s.must(200, "GET", signing.PublicKeyPath, nil, "")
	var env struct {
		Data signing.PublicKeySet `json:"data"`
	}
	if err := json.Unmarshal(r.Raw, &env); err != nil {
		t.Fatal(err)
	}
	for _, k := range env.Data.Keys {
		if k.KID == env.Data.ActiveKID {
			pub, err := k.Decode()
			if err != nil {
				t.Fatal(err)
			}
			return k.KID, pub, env.Data
		}
	}
	t.Fatalf("no active key in %s", r.Raw)
	return "", nil, signing.PublicKeySet{}
}

// issued decodes a mint answer and verifies it against pub: the
// signature covers payload_b64's bytes, value is its header form.
func issued(t *testing.T, r resp, kid string, pub ed25519.PublicKey, payload any) map[string]any {
	t.Helper()
	d := data(r)
	c := signing.Claim{PayloadB64: d["payload_b64"].(string), SignatureHex: d["signature_hex"].(string), KID: d["kid"].(string)}
	if c.KID != kid {
		t.Fatalf("claim signed by %q, the active key is %q", c.KID, kid)
	}
	if err := signing.VerifyClaim(c, payload, pub); err != nil {
		t.Fatalf("claim does not verify with the published active key: %v", err)
	}
	if d["value"] != c.PayloadB64+"."+c.SignatureHex+"."+c.KID {
		t.Fatalf("value %q", d["value"])
	}
	return d
}

func TestContainerClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	kid, pub, set := s.activeKey(t)
	if set.SigningFormat.ContainerClaimSignedData == "" || set.SigningFormat.IdentityClaimSignedData == "" {
		t.Fatalf("key set lacks the claim formats: %+v", set.SigningFormat)
	}
	path := "/api/v1/containers/" + f.cid + "/claims"
	agentTok := data(s.must(201, "POST", "/api/v1/containers/"+f.cid+"/agent-tokens", nil, f.alice))["token"].(string)

	var p proxyperm.ContainerClaim
	before := time.Now().Unix()
	d := issued(t, s.must(200, "POST", path, map[string]any{"aud": "c2"}, agentTok), kid, pub, &p)
	if p.Type != "container" || p.Container != f.cid || p.Project != f.pid || p.Audience != "c2" ||
		p.IssuedAt < before-1 || p.Expires-p.IssuedAt != 300 {
		t.Fatalf("payload %+v", p)
	}
	if d["expires_at"] == nil || d["payload"].(map[string]any)["aud"] != "c2" {
		t.Fatalf("answer %v", d)
	}
	// The claim passes the gateway's check for c2 only.
	now := time.Now()
	if why := p.Check("c2", now); why != "" {
		t.Fatalf("fresh claim refused: %s", why)
	}
	if why := p.Check("c3", now); why == "" {
		t.Fatal("claim for c2 passed at c3")
	}
	var p2 proxyperm.ContainerClaim
	issued(t, s.must(200, "POST", path, map[string]any{"aud": "c2", "ttl_seconds": 3600}, f.alice), kid, pub, &p2)
	if p2.Expires-p2.IssuedAt != 3600 {
		t.Fatalf("ttl: %+v", p2)
	}

	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "aud"},
		{map[string]any{"aud": "Not-An-Id"}, "aud"},
		{map[string]any{"aud": "c2", "ttl_seconds": 5}, "ttl_seconds"},
		{map[string]any{"aud": "c2", "ttl_seconds": 7200}, "ttl_seconds"},
	} {
		if m := s.must(400, "POST", path, c.body, f.alice).Body["message"].(string); !strings.HasPrefix(m, c.field+":") {
			t.Errorf("%v: %s", c.body, m)
		}
	}
	s.must(403, "POST", path, map[string]any{"aud": "c2"}, f.bob) // a viewer
	// Another container's agent token may not speak for c1.
	s.must(201, "POST", "/api/v1/admin/containers", map[string]any{"project_id": f.pid, "name": "two", "id": "c2"}, s.admin)
	other := data(s.must(201, "POST", "/api/v1/containers/c2/agent-tokens", nil, f.alice))["token"].(string)
	s.must(403, "POST", path, map[string]any{"aud": "c3"}, other)
	s.must(403, "POST", path, map[string]any{"aud": "c2"}, f.carol)
	s.must(401, "POST", path, map[string]any{"aud": "c2"}, "")
	s.must(404, "POST", "/api/v1/containers/nosuch/claims", map[string]any{"aud": "c2"}, f.alice)
}

func TestIdentityClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.s
	kid, pub, _ := s.activeKey(t)
	const path = "/api/v1/users/auth/identity-claim"
	var p struct {
		Type     string `json:"typ"`
		Subject  string `json:"sub"`
		Role     string `json:"role"`
		Audience string `json:"aud"`
		IssuedAt int64  `json:"iat"`
		Expires  int64  `json:"exp"`
	}
	issued(t, s.must(200, "POST", path, map[string]any{"aud": "https://svc.example/api", "ttl_seconds": 60}, f.alice), kid, pub, &p)
	if p.Type != "identity" || p.Subject != f.aliceID || p.Role != "user" || p.Audience != "https://svc.example/api" || p.Expires-p.IssuedAt != 60 {
		t.Fatalf("payload %+v", p)
	}
	// An identity claim is never a container claim, though one key signs both.
	var as proxyperm.ContainerClaim
	d := data(s.must(200, "POST", path, map[string]any{"aud": "c1"}, f.bob))
	_ = signing.VerifyClaim(signing.Claim{PayloadB64: d["payload_b64"].(string), SignatureHex: d["signature_hex"].(string)}, &as, pub)
	if why := as.Check("c1", time.Now()); why == "" {
		t.Fatal("an identity claim passed as a container claim")
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "aud"},
		{map[string]any{"aud": strings.Repeat("a", 257)}, "aud"},
		{map[string]any{"aud": "a\x01b"}, "aud"},
		{map[string]any{"aud": "x", "ttl_seconds": -1}, "ttl_seconds"},
	} {
		if m := s.must(400, "POST", path, c.body, f.alice).Body["message"].(string); !strings.HasPrefix(m, c.field+":") {
			t.Errorf("%v: %s", c.body, m)
		}
	}
	s.must(401, "POST", path, map[string]any{"aud": "x"}, "")
}

// The key set's answer carries one endorsement per key, over the very
// bytes sent: a verifier that trusts the active key accepts the set.
func TestKeySetIsEndorsedByItsKeys(t *testing.T) {
	t.Parallel()
	s := start(t)
	kid, pub, _ := s.activeKey(t)
	f, err := signing.HTTPKeySetFetcher(nil, s.URL)(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Signatures) < 2 {
		t.Fatalf("signatures %q: want X-Service-Signature and an endorsement", f.Signatures)
	}
	keys, err := signing.AcceptKeySet(map[string]ed25519.PublicKey{kid: pub}, f, time.Now(), time.Minute)
	if err != nil || !keys[kid].Equal(pub) {
		t.Fatalf("set not accepted with the active key trusted: %v", err)
	}
}
