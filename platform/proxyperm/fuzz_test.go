package proxyperm_test

import (
	"encoding/json"
	"errors"
	"testing"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/proxyperm"
)

// FuzzAccess: any bytes either parse into an access value that survives a
// JSON round trip unchanged and never admits a port it should not, or are
// refused with a rule; nothing panics. Seeds: testdata/fuzz/FuzzAccess
// plus those below (go test runs them all).
func FuzzAccess(f *testing.F) {
	for _, s := range []string{`true`, `false`, `"*"`, `80`, `[80,443]`, `"8000-8100"`, `"9-3"`, `70000`, `0`, `[]`, `null`, `"a-b"`, `1e3`, `-1`, `"-"`, `[1,"2"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := proxyperm.ParseAccess(raw)
		if err != nil {
			var ae *proxyperm.AccessError
			if !errors.As(err, &ae) || ae.Rule == "" {
				t.Fatalf("refusal without a rule: %v", err)
			}
			return
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("valid access does not marshal: %v", err)
		}
		b, err := proxyperm.ParseAccess(out)
		if err != nil {
			t.Fatalf("round trip of %s refused: %v", out, err)
		}
		for _, port := range []int{0, 1, 22, 80, 443, 8080, 65535} {
			if a.Allows(port) != b.Allows(port) {
				t.Fatalf("round trip of %s changed port %d", raw, port)
			}
			if a.Kind == proxyperm.AccessNone && a.Allows(port) {
				t.Fatal("false admits a port")
			}
		}
		if a.Allows(0) && a.Kind != proxyperm.AccessAll && a.Kind != proxyperm.AccessStar {
			t.Fatalf("%s admits port 0", raw)
		}
	})
}

// FuzzGroup: any group body either validates (and then normalizes and
// compiles) or is refused with a 400 naming a field under groups.g; nothing
// panics.
func FuzzGroup(f *testing.F) {
	for _, s := range []string{
		`{"type":"ip","range":"10.0.0.0/8"}`, `{"type":"ip","range":"10.0.0.0/33"}`, `{"type":"ip","range":"1.2.3.4"}`,
		`{"type":"token","header":"X-K","value":"v"}`, `{"type":"token","header":"X-K","cookie":"c","value":"v"}`,
		`{"type":"password","username":"u","password":"p"}`, `{"type":"password","username":"u","password":"p","algorithm":"sha256"}`,
		`{"type":"jwt","algorithm":"HS256","secret":"s","sources":["header:A"],"claims":{"a":1}}`,
		`{"type":"jwt","algorithm":"RS256","secret":"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----","sources":["cookie:t"]}`,
		`{"type":"service-identity","containers":["c1"]}`, `{"type":""}`, `{}`,
		`{"type":"token","header":"X-K","value_configured":true}`, `{"type":"password","username":"u","password_configured":true,"algorithm":"argon2id"}`,
		`{"type":"password","username":"u","password":"$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA","algorithm":"argon2id"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var g proxyperm.Group
		if err := platform.DecodeBytes(raw, &g); err != nil {
			return // not a group object at all: the decoder's 400
		}
		if err := g.Validate("groups.g"); err != nil {
			var pe *fault.Error
			if !errors.As(err, &pe) || pe.Code != fault.CodeInvalid || len(pe.Field) < len("groups.g") || pe.Field[:8] != "groups.g" {
				t.Fatalf("refusal does not name a field of the group: %v", err)
			}
			return
		}
		if err := g.Normalize(); err != nil {
			t.Fatal(err)
		}
		d := &proxyperm.Document{Project: "p", Container: "c", Groups: map[string]proxyperm.Group{"g": g}, Permissions: map[string]proxyperm.Rules{}}
		_, err := proxyperm.Compile(d)
		if g.Masked() {
			if err == nil {
				t.Fatal("a masked group compiled")
			}
			return
		}
		if err != nil {
			t.Fatalf("valid group does not compile: %v", err)
		}
		masked := g.Mask()
		for _, s := range masked.Secrets() {
			t.Fatalf("masked group still holds %q", s)
		}
	})
}
