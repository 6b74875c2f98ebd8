package proxyperm_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"deckhand/platform/proxyperm"
)

// accessToken signs an access claim in the header form the control plane
// answers: <payload_b64>.<signature_hex>.<kid>.
func accessToken(t testing.TB, priv ed25519.PrivateKey, c proxyperm.AccessClaim) string {
	t.Helper()
	raw, _ := json.Marshal(c)
	b64 := base64.RawURLEncoding.EncodeToString(raw)
	return b64 + "." + hex.EncodeToString(ed25519.Sign(priv, []byte(b64))) + ".k1"
}

func TestAccessToken(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	verify := verifierFor(pub)
	iat, exp := evalNow.Add(-time.Minute).Unix(), evalNow.Add(time.Hour).Unix()
	good := proxyperm.AccessClaim{Type: proxyperm.ClaimTypeAccess, Container: "c1", Subject: "u1", IssuedAt: iat, Expires: exp}
	deny := compileJSON(t, `{"project":"p1","container":"c1","default":"deny","groups":{},"permissions":{}}`)
	off := compileJSON(t, `{"project":"p1","container":"c1","default":"allow","enable_proxy":false,"groups":{},"permissions":{}}`)
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	facts := func(program, service string, headers, cookies map[string]string) proxyperm.Facts {
		f := req{program: program, headers: headers, cookies: cookies}.facts()
		f.Service = service
		return f
	}
	with := func(mod func(*proxyperm.AccessClaim)) proxyperm.AccessClaim { c := good; mod(&c); return c }

	tok := accessToken(t, priv, good)
	for _, pol := range []*proxyperm.Policy{deny, nil} {
		for _, f := range []proxyperm.Facts{
			facts("exec", "process", bearer(tok), nil),
			facts("terminal", "terminal", nil, map[string]string{proxyperm.AccessCookie: tok}),
			facts("ssh", "tunnel", bearer(tok), nil),
		} {
			d := pol.Evaluate(f, verify)
			if !d.Allowed() || d.Type != proxyperm.TypeAccess || d.Subject != "user:u1" {
				t.Fatalf("a valid access token for %s (document %v): %+v", f.Service, pol != nil, d)
			}
		}
	}
	// Refused: the proxy disabled, no verifier (no control plane), another
	// key, another container, expired, too long, not yet issued, no
	// subject, another typ (a preview token's payload), a mangled value.
	if d := off.Evaluate(facts("exec", "process", bearer(tok), nil), verify); d.Allowed() {
		t.Fatalf("a disabled proxy admitted an access token: %+v", d)
	}
	if d := deny.Evaluate(facts("exec", "process", bearer(tok), nil), nil); d.Allowed() {
		t.Fatalf("admitted with no verifier: %+v", d)
	}
	bad := map[string]string{
		"another key":       accessToken(t, other, good),
		"another container": accessToken(t, priv, with(func(c *proxyperm.AccessClaim) { c.Container = "c2" })),
		"expired":           accessToken(t, priv, with(func(c *proxyperm.AccessClaim) { c.Expires = evalNow.Add(-time.Second).Unix() })),
		"too long": accessToken(t, priv, with(func(c *proxyperm.AccessClaim) {
			c.Expires = evalNow.Add(proxyperm.MaxAccessLifetime).Unix()
		})),
		"future":      accessToken(t, priv, with(func(c *proxyperm.AccessClaim) { c.IssuedAt = evalNow.Add(time.Hour).Unix() })),
		"no subject":  accessToken(t, priv, with(func(c *proxyperm.AccessClaim) { c.Subject = "" })),
		"preview typ": accessToken(t, priv, with(func(c *proxyperm.AccessClaim) { c.Type = proxyperm.ClaimTypePreview })),
		"mangled":     tok[:len(tok)-8] + "00000000",
	}
	for name, v := range bad {
		if d := deny.Evaluate(facts("exec", "process", bearer(v), nil), verify); d.Allowed() || d.Outcome != proxyperm.Unauthorized {
			t.Errorf("%s: %+v", name, d)
		}
	}

	// Limited to services: the named ones pass, others not; a service
	// acting for its caller (mcp) reaches what its tools call.
	mcp := accessToken(t, priv, with(func(c *proxyperm.AccessClaim) { c.Services = []string{"mcp", "files"} }))
	if d := deny.Evaluate(facts("services", "mcp", bearer(mcp), nil), verify); !d.Allowed() {
		t.Fatalf("mcp token at mcp: %+v", d)
	}
	if d := deny.Evaluate(facts("files", "files", bearer(mcp), nil), verify); !d.Allowed() {
		t.Fatalf("mcp,files token at files: %+v", d)
	}
	if d := deny.Evaluate(facts("exec", "process", bearer(mcp), nil), verify); d.Allowed() {
		t.Fatalf("mcp token straight at process: %+v", d)
	}
	f := facts("exec", "process", bearer(mcp), nil)
	f.ActingFor, f.Via = true, "mcp"
	if d := deny.Evaluate(f, verify); !d.Allowed() {
		t.Fatalf("mcp acting for the token's holder on process: %+v", d)
	}
	f.Via = "journal"
	if d := deny.Evaluate(f, verify); d.Allowed() {
		t.Fatalf("another service acting with an mcp token: %+v", d)
	}
}
