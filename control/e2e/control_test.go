package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/signing"
)

func TestDiscoveryEnvelopesAndLimits(t *testing.T) {
	t.Parallel()
	p := serve(t, t.TempDir(), nil)

	// Regions: the built-in defaults.
	r := p.do("GET", "/api/v1/auth/available-regions", nil)
	regions, _ := r.data()["regions"].([]any)
	if r.status != 200 || r.body["statusCode"] != float64(200) || len(regions) == 0 {
		t.Fatalf("regions: %d %s", r.status, r.raw)
	}
	for _, x := range regions {
		reg := x.(map[string]any)
		_, avail := reg["available"].(bool)
		if reg["region"] == "" || reg["country"] == "" || reg["city"] == "" || !avail {
			t.Errorf("region record %v lacks a field", reg)
		}
	}

	// Public key set: every field of docs/spec/interface.md, encodings agreeing.
	r = p.do("GET", "/api/v1/meta/public-key", nil)
	d := r.data()
	if r.status != 200 || r.body["message"] == "" {
		t.Fatalf("public key: %d %s", r.status, r.raw)
	}
	keys := d["keys"].([]any)
	if len(keys) != 1 {
		t.Fatalf("fresh data dir publishes %d keys, want 1", len(keys))
	}
	k := keys[0].(map[string]any)
	raw, err := hex.DecodeString(k["public_key_hex"].(string))
	if err != nil || len(raw) != 32 || k["algorithm"] != "ed25519" ||
		k["public_key_b64"] != base64.StdEncoding.EncodeToString(raw) ||
		k["public_key_b64url"] != base64.RawURLEncoding.EncodeToString(raw) || d["active_kid"] != k["kid"] {
		t.Fatalf("key record: %v (active %v)", k, d["active_kid"])
	}
	usage := strings.Join(toStrings(d["usage"]), ",")
	if usage != "response-signing,identity-claims,container-claims" {
		t.Errorf("usage %q", usage)
	}
	f := d["signing_format"].(map[string]any)
	for _, field := range []string{"response_header", "response_signed_data", "identity_claim_signed_data", "container_claim_signed_data"} {
		if s, _ := f[field].(string); s == "" {
			t.Errorf("signing_format.%s missing", field)
		}
	}
	if f["replay_tolerance_seconds"] != float64(300) {
		t.Errorf("replay_tolerance_seconds %v", f["replay_tolerance_seconds"])
	}

	// Errors: envelopes, signed like everything else.
	cases := []struct {
		name, method, path string
		body               []byte
		status             int
		errText            string
	}{
		{"unknown route", "GET", "/api/v1/no/such/route", nil, 404, "Not Found"},
		{"unknown route, POST", "POST", "/nope", []byte(`{}`), 404, "Not Found"},
		{"wrong method", "PUT", "/api/v1/meta/public-key", nil, 405, "Method Not Allowed"},
		{"malformed JSON", "POST", "/api/v1/auth/signup", []byte(`{"email":`), 400, "Bad Request"},
		{"wrong type", "POST", "/api/v1/auth/signup", []byte(`{"email":5,"password":"x"}`), 400, "Bad Request"},
		{"guarded route, no credential", "GET", "/api/v1/users/auth/me", nil, 401, "Unauthorized"},
	}
	for _, tc := range cases {
		r := p.do(tc.method, tc.path, tc.body)
		msg, _ := r.body["message"].(string)
		if r.status != tc.status || r.body["statusCode"] != float64(tc.status) || r.body["error"] != tc.errText || msg == "" {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
		if strings.Contains(msg, "json:") || strings.Contains(msg, "goroutine") {
			t.Errorf("%s: internals in message %q", tc.name, msg)
		}
	}
	r = p.oversized("/api/v1/auth/signup")
	if r.status != 413 || r.body["statusCode"] != float64(413) || r.body["error"] != "Request Entity Too Large" {
		t.Errorf("oversized body: %d %s", r.status, r.raw)
	}

	// The kernel's own routes are signed too.
	for _, path := range []string{"/health", "/openapi.json", "/openapi.yaml"} {
		if r := p.do("GET", path, nil); r.status != 200 {
			t.Errorf("%s: %d", path, r.status)
		}
	}

	// Negative check: a tampered body fails both verifiers.
	r = p.do("GET", "/api/v1/auth/available-regions", nil)
	s, err := signing.ParseHeader(r.header.Get(signing.Header))
	if err != nil {
		t.Fatal(err)
	}
	tampered := []byte(strings.Replace(string(r.raw), `"available":false`, `"available":true `, 1))
	if string(tampered) == string(r.raw) {
		tampered = append([]byte{}, r.raw...)
		tampered[len(tampered)-2] ^= 0x01
	}
	if _, err := p.v.Verify(context.Background(), r.header.Get(signing.Header), r.path, tampered); !errors.Is(err, signing.ErrBadSignature) {
		t.Errorf("tampered body, crypto/ed25519: %v", err)
	}
	if opensslVerify(t, p.publicKey(s.KID), signing.SignedData(s.T, tampered), s.Sig) {
		t.Error("tampered body, openssl accepts it")
	}
	if opensslVerify(t, p.publicKey(s.KID), signing.SignedData(s.T+1, r.raw), s.Sig) {
		t.Error("shifted timestamp, openssl accepts it")
	}
	if _, err := p.v.Verify(context.Background(), r.header.Get(signing.Header), "/api/v1/meta/public-key", r.raw); !errors.Is(err, signing.ErrPathMismatch) {
		t.Errorf("response replayed for another path: %v", err)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestSigningOffAndConfigPrecedence(t *testing.T) {
	t.Parallel()
	regionsFile := func(name string) string {
		p := filepath.Join(t.TempDir(), name+".json")
		os.WriteFile(p, []byte(`[{"region":"`+name+`","country":"NL","city":"Delft","available":true}]`), 0o600)
		return p
	}
	envFile, flagFile := regionsFile("from-env"), regionsFile("from-flag")
	cases := []struct {
		name       string
		env        []string
		args       []string
		signed     bool
		wantRegion string
	}{
		{"defaults", nil, nil, true, "eu-central-1"},
		{"flag --signing=false", nil, []string{"--signing=false"}, false, "eu-central-1"},
		{"env beats default", []string{"DECKHAND_SIGNING=false", "DECKHAND_REGIONS_FILE=" + envFile}, nil, false, "from-env"},
		{"flag beats env", []string{"DECKHAND_SIGNING=false", "DECKHAND_REGIONS_FILE=" + envFile},
			[]string{"--signing=true", "--regions-file", flagFile}, true, "from-flag"},
		{"env listen", []string{"DECKHAND_LISTEN=127.0.0.1:0"}, nil, true, "eu-central-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			p := serve(t, data, tc.env, tc.args...)
			p.signed = tc.signed
			if strings.HasSuffix(p.url, ":8080") {
				t.Fatalf("listening on the default port although --listen or DECKHAND_LISTEN asked for :0: %s", p.url)
			}
			r := p.do("GET", "/api/v1/meta/public-key", nil)
			if tc.signed && r.status != 200 {
				t.Fatalf("public key with signing on: %d %s", r.status, r.raw)
			}
			if !tc.signed {
				if r.status != 503 || r.body["statusCode"] != float64(503) || r.body["error"] != "SIGNING_NOT_CONFIGURED" {
					t.Fatalf("public key with signing off: %d %s", r.status, r.raw)
				}
				if _, err := os.Stat(filepath.Join(data, "keys")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("keys made with signing off: %v", err)
				}
			}
			r = p.do("GET", "/api/v1/auth/available-regions", nil)
			regions, _ := r.data()["regions"].([]any)
			if len(regions) == 0 || regions[0].(map[string]any)["region"] != tc.wantRegion {
				t.Fatalf("regions: %s, want first %q", r.raw, tc.wantRegion)
			}
			r = p.do("GET", "/no/such/route", nil)
			if r.status != 404 || r.body["error"] != "Not Found" {
				t.Fatalf("404: %d %s", r.status, r.raw)
			}
		})
	}
}

func TestStartupFailuresAreClear(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"postgres flag", nil, []string{"--database-url", "postgres://u:secretpw@127.0.0.1:1/deckhand"},
			`PostgreSQL at host 127.0.0.1 port 1, database "deckhand", user "u": cannot connect`},
		{"postgres env", []string{"DECKHAND_DATABASE_URL=postgres://u:secretpw@127.0.0.1:1/deckhand"}, nil,
			`PostgreSQL at host 127.0.0.1 port 1, database "deckhand"`},
		{"bad env value", []string{"DECKHAND_SIGNING=maybe"}, nil, "DECKHAND_SIGNING"},
		{"bad fee", nil, []string{"--transfer-fee-bps", "10000"}, "--transfer-fee-bps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir()}, tc.args...)
			_, stderr, err := run(t, tc.env, args...)
			var exit interface{ ExitCode() int }
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("err %v, stderr %q, want exit 1 mentioning %q", err, stderr, tc.want)
			}
			if strings.Contains(stderr, "secretpw") {
				t.Fatalf("password echoed: %s", stderr)
			}
		})
	}
	out, _, err := run(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "deckhand-control ") {
		t.Fatalf("version: %v %q", err, out)
	}
}

func TestKeysRotateRestartAndDataLock(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	p := serve(t, data, nil)
	old := p.do("GET", "/api/v1/auth/available-regions", nil)
	oldSig, _ := signing.ParseHeader(old.header.Get(signing.Header))

	// A second process on the same --data fails fast and says why.
	_, stderr, err := run(t, nil, "serve", "--listen", "127.0.0.1:0", "--data", data)
	if err == nil || !strings.Contains(stderr, "another deckhand-control process is using this --data directory") ||
		!strings.Contains(stderr, "control.db") {
		t.Fatalf("second process: %v, stderr %q", err, stderr)
	}

	p.stop()
	out, stderr, err := run(t, nil, "keys", "rotate", "--data", data)
	newKid := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(newKid, "ed25519-") || newKid == oldSig.KID {
		t.Fatalf("keys rotate: %v %q %q", err, out, stderr)
	}
	// Key files on disk: 0700 directory, 0600 files.
	if st, err := os.Stat(filepath.Join(data, "keys")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("keys dir: %v %v", err, st.Mode())
	}
	entries, _ := os.ReadDir(filepath.Join(data, "keys"))
	for _, e := range entries {
		st, _ := os.Stat(filepath.Join(data, "keys", e.Name()))
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", e.Name(), st.Mode().Perm())
		}
	}

	p2 := serve(t, data, nil)
	r := p2.do("GET", "/api/v1/meta/public-key", nil)
	d := r.data()
	keys := d["keys"].([]any)
	if len(keys) != 2 || d["active_kid"] != newKid || keys[0].(map[string]any)["kid"] != oldSig.KID {
		t.Fatalf("after rotation: %s", r.raw)
	}
	if s, _ := signing.ParseHeader(r.header.Get(signing.Header)); s.KID != newKid {
		t.Fatalf("new responses signed by %q, want %q", s.KID, newKid)
	}
	// The response signed before the rotation still verifies against the
	// new process's published set (fresh verifier, and openssl).
	p2.check(old)

	// keys rotate next to a running server, then SIGHUP: it signs with
	// the newest key without a restart.
	out, _, err = run(t, nil, "keys", "rotate", "--data", data)
	third := strings.TrimSpace(out)
	if err != nil || third == newKid {
		t.Fatalf("second rotate: %v %q", err, out)
	}
	if err := p2.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := p2.do("GET", "/api/v1/meta/public-key", nil)
		if r.data()["active_kid"] == third && len(r.data()["keys"].([]any)) == 3 {
			if s, _ := signing.ParseHeader(r.header.Get(signing.Header)); s.KID != third {
				t.Fatalf("after SIGHUP signed by %q, want %q", s.KID, third)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not load the rotated key: %s", r.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAdminBootstrap(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const email, password = "boot@example.com", "Bootstrap-Pass-42!"
	p := serve(t, data, []string{"DECKHAND_ADMIN_PASSWORD=" + password}, "--admin-email", email)
	if !strings.Contains(p.stdout.String(), "admin user "+email+" created") {
		t.Fatalf("first start: %q", p.stdout.String())
	}
	p.stop()
	p = serve(t, data, nil, "--admin-email", email, "--admin-password", password)
	if !strings.Contains(p.stdout.String(), "admin user "+email+" already exists") {
		t.Fatalf("second start: %q", p.stdout.String())
	}
	p.stop()
	if strings.Contains(p.stdout.String()+p.stderr.String(), password) {
		t.Fatal("the admin password reached the output")
	}
}
