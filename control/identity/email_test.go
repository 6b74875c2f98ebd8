package identity_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"deckhand/control/identity"
	"deckhand/platform/store"
)

// Addresses that look alike but differ in invisible, bidi or
// malformed bytes are refused with 400 naming the field; nothing is
// written and no mail goes out.
func TestSignupRefusesSpoofableAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name  string
		email string
		want  string
	}{
		{"zero-width space in local part", "ad\u200bmin@example.com", "invisible"},
		{"zero-width joiner in domain", "admin@exa\u200dmple.com", "invisible"},
		{"byte order mark", "\ufeffadmin@example.com", "invisible"},
		{"soft hyphen", "ad\u00admin@example.com", "invisible"},
		{"right-to-left override", "\u202eadmin@example.com", "bidirectional"},
		{"first strong isolate", "admin@example.com\u2068", "bidirectional"},
		{"left-to-right mark", "admin\u200e@example.com", "bidirectional"},
		{"Cyrillic a in a Latin domain", "admin@p\u0430ypal.com", "mixes scripts"},
		{"Greek omicron in a Latin domain", "admin@g\u03bfogle.com", "mixes scripts"},
		{"mixed script as punycode", "admin@xn--pypal-4ve.com", "mixes scripts"},
		{"Cyrillic a in a Latin local part", "\u0430dmin@example.com", "local part"},
		{"replacement character", "adm\ufffdin@example.com", "UTF-8"},
		{"control character", "ad\u0007min@example.com", "invisible"},
	}
	for _, tc := range cases {
		r := e.call("POST", "/api/v1/auth/signup", map[string]any{"email": tc.email, "password": goodPassword}, "")
		if r.status != 400 || r.str("error") != "Bad Request" || !strings.HasPrefix(r.str("message"), "email: ") || !strings.Contains(r.str("message"), tc.want) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
	}
	// Invalid UTF-8 in the raw body (the JSON decoder would make it U+FFFD).
	raw := []byte(`{"email":"adm` + "\xff\xfe" + `in@example.com","password":"` + goodPassword + `"}`)
	r := e.call("POST", "/api/v1/auth/signup", raw, "")
	if r.status != 400 || !strings.HasPrefix(r.str("message"), "email: ") || !strings.Contains(r.str("message"), "UTF-8") {
		t.Errorf("invalid UTF-8: %d %s", r.status, r.raw)
	}
	// Login and recovery refuse them the same way.
	r = e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": "ad\u200bmin@example.com", "password": goodPassword}, "")
	if r.status != 400 || !strings.Contains(r.str("message"), "email: ") {
		t.Errorf("login: %d %s", r.status, r.raw)
	}
	r = e.call("POST", "/api/v1/auth/forgot-password", map[string]any{"email": "\u202eadmin@example.com"}, "")
	if r.status != 400 || !strings.Contains(r.str("message"), "email: ") {
		t.Errorf("forgot: %d %s", r.status, r.raw)
	}
	entries, _ := os.ReadDir(e.mailDir)
	if len(entries) != 0 {
		t.Fatalf("refused addresses sent %d mails", len(entries))
	}
}

// Two spellings of one address are one account: composed and
// decomposed forms, upper- and lower-case domain, Unicode domain and its
// punycode. The account's address is the canonical form (NFC, lower case,
// the domain in its ASCII form).
func TestAddressSpellingsAreOneAccount(t *testing.T) {
	t.Parallel()
	// Every spelling shares one address's mail budget, which this test
	// spends several times over.
	e := newEnv(t, func(d *identity.Deps) {
		l := identity.DefaultLimits()
		l.RecoveryPerAccount = identity.Rule{N: 100, Per: time.Hour}
		d.Limits = &l
	})
	groups := []struct {
		canonical string
		spellings []string
	}{
		{"jos\u00e9@example.com", []string{"jos\u00e9@example.com", "jose\u0301@example.com", "JOSE\u0301@Example.COM"}},
		{"anna@xn--bcher-kva.de", []string{"anna@b\u00fccher.de", "anna@xn--bcher-kva.de", "anna@BU\u0308CHER.de", "anna@XN--BCHER-KVA.DE"}},
		{"kim@xn--3e0b707e.kr", []string{"kim@\ud55c\uad6d.kr", "kim@xn--3e0b707e.kr"}},
	}
	for _, g := range groups {
		first := e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": g.spellings[0], "password": goodPassword}, ""), 200)
		if got := first.str("data", "email"); got != g.canonical {
			t.Fatalf("signup %q answered %q, want %q", g.spellings[0], got, g.canonical)
		}
		e.must(e.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": e.mailToken(g.canonical)}, ""), 200)
		for _, sp := range g.spellings {
			// Signing up again notifies the one account instead of making another.
			before := len(e.mails(g.canonical))
			r := e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": sp, "password": goodPassword}, ""), 200)
			if r.str("data", "email") != g.canonical {
				t.Errorf("signup %q answered %q", sp, r.str("data", "email"))
			}
			ms := e.mails(g.canonical)
			if len(ms) != before+1 || !strings.Contains(ms[len(ms)-1], "already exists") {
				t.Errorf("signup %q did not reach the existing account", sp)
			}
			// Login with any spelling is the same user.
			me := e.must(e.call("GET", "/api/v1/users/auth/me", nil, e.login(sp, goodPassword)["token"].(string)), 200)
			if me.str("data", "email") != g.canonical {
				t.Errorf("login %q is %q", sp, me.str("data", "email"))
			}
		}
	}
	// Every mail's To: is valid UTF-8 without replacement characters.
	entries, _ := os.ReadDir(e.mailDir)
	for _, en := range entries {
		raw, _ := os.ReadFile(e.mailDir + "/" + en.Name())
		if !utf8.Valid(raw) || strings.ContainsRune(string(raw), utf8.RuneError) {
			t.Fatalf("%s is not clean UTF-8", en.Name())
		}
	}
}

// Single-script internationalized domains and the mixes UTS 39 allows
// (Latin with Japanese scripts) are accepted.
func TestSignupAcceptsInternationalAddresses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for email, want := range map[string]string{
		"ivan@\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444": "ivan@xn--e1afmkfd.xn--p1ai",
		"taro@\u30bd\u30cb\u30fcabc.jp":                          "taro@xn--abc-ll4bucyp.jp",
		"\u00e9lodie@caf\u00e9.example":                          "\u00e9lodie@xn--caf-dma.example",
		"user@example.com":                                       "user@example.com",
	} {
		r := e.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPassword}, "")
		if r.status != 200 || r.str("data", "email") != want {
			t.Errorf("%q: %d %s", email, r.status, r.raw)
		}
	}
}

// Admin create follows the same rules: a spelling of an existing address
// is that address (409), an invisible character is 400.
func TestAdminCreateCanonicalAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := e.admin()
	e.must(e.call("POST", "/api/v1/admin/users", map[string]any{"email": "jos\u00e9@example.com", "password": "Admin-pass-123"}, root), 201)
	e.must(e.call("POST", "/api/v1/admin/users", map[string]any{"email": "JOSE\u0301@EXAMPLE.com", "password": "Admin-pass-123"}, root), 409)
	r := e.must(e.call("POST", "/api/v1/admin/users", map[string]any{"email": "jo\u200bse@example.com", "password": "Admin-pass-123"}, root), 400)
	if !strings.HasPrefix(r.str("message"), "email: ") {
		t.Fatalf("%s", r.raw)
	}
}

// A store from before the canonical form (addresses only lower-cased) is
// re-keyed once at start: the Unicode-domain account is found by every
// spelling afterwards.
func TestStoredAddressesBecomeCanonical(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "control.db"))
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := identity.HashPassword(goodPassword)
	now := time.Now().UTC()
	err = db.Update(func(tx *store.Tx) error {
		u := map[string]any{"id": "u-old", "username": "anna", "alias": "anna", "email": "anna@b\u00fccher.de", "role": "user",
			"email_verified": true, "password_hash": hash, "created_at": now, "updated_at": now}
		if err := tx.Put("identity_users", "u-old", u); err != nil {
			return err
		}
		if err := tx.PutRaw("identity_users_by_username", "anna", []byte("u-old")); err != nil {
			return err
		}
		return tx.PutRaw("identity_users_by_email", "anna@b\u00fccher.de", []byte("u-old"))
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(d *identity.Deps) { d.DB = db })
	for _, sp := range []string{"anna@b\u00fccher.de", "anna@xn--bcher-kva.de", "Anna@BU\u0308CHER.DE"} {
		me := e.must(e.call("GET", "/api/v1/users/auth/me", nil, e.login(sp, goodPassword)["token"].(string)), 200)
		if me.str("data", "id") != "u-old" || me.str("data", "email") != "anna@xn--bcher-kva.de" {
			t.Fatalf("%q: %s", sp, me.raw)
		}
	}
}
