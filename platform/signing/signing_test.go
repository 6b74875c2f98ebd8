package signing_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"
)

// RFC 8032 section 7.1, TEST 1, 2, 3 and 1024 (a 1023-byte message).
var rfc8032 = []struct{ name, seed, pub, msg, sig string }{
	{"TEST 1",
		"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
		"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
		"",
		"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
	{"TEST 2",
		"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
		"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
		"72",
		"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
	{"TEST 3",
		"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
		"fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
		"af82",
		"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
	{"TEST 1024",
		"f5e5767cf153319517630f226876b86c8160cc583bc013744c6bf255f5cc0ee5",
		"278117fc144c72340f67d0f2316e8386ceffbf2b2428c9c51fef7c597f1d426e",
		"08b8b2b733424243760fe426a4b54908632110a66c2f6591eabd3345e3e4eb98fa6e264bf09efe12ee50f8f54e9f77b1" +
			"e355f6c50544e23fb1433ddf73be84d879de7c0046dc4996d9e773f4bc9efe5738829adb26c81b37c93a1b270b20329d" +
			"658675fc6ea534e0810a4432826bf58c941efb65d57a338bbd2e26640f89ffbc1a858efcb8550ee3a5e1998bd177e93a" +
			"7363c344fe6b199ee5d02e82d522c4feba15452f80288a821a579116ec6dad2b3b310da903401aa62100ab5d1a36553e" +
			"06203b33890cc9b832f79ef80560ccb9a39ce767967ed628c6ad573cb116dbefefd75499da96bd68a8a97b928a8bbc10" +
			"3b6621fcde2beca1231d206be6cd9ec7aff6f6c94fcd7204ed3455c68c83f4a41da4af2b74ef5c53f1d8ac70bdcb7ed1" +
			"85ce81bd84359d44254d95629e9855a94a7c1958d1f8ada5d0532ed8a5aa3fb2d17ba70eb6248e594e1a2297acbbb39d" +
			"502f1a8c6eb6f1ce22b3de1a1f40cc24554119a831a9aad6079cad88425de6bde1a9187ebb6092cf67bf2b13fd65f270" +
			"88d78b7e883c8759d2c4f5c65adb7553878ad575f9fad878e80a0c9ba63bcbcc2732e69485bbc9c90bfbd62481d9089b" +
			"eccf80cfe2df16a2cf65bd92dd597b0707e0917af48bbb75fed413d238f5555a7a569d80c3414a8d0859dc65a46128ba" +
			"b27af87a71314f318c782b23ebfe808b82b0ce26401d2e22f04d83d1255dc51addd3b75a2b1ae0784504df543af8969b" +
			"e3ea7082ff7fc9888c144da2af58429ec96031dbcad3dad9af0dcbaaaf268cb8fcffead94f3c7ca495e056a9b47acdb7" +
			"51fb73e666c6c655ade8297297d07ad1ba5e43f1bca32301651339e22904cc8c42f58c30c04aafdb038dda0847dd988d" +
			"cda6f3bfd15c4b4c4525004aa06eeff8ca61783aacec57fb3d1f92b0fe2fd1a85f6724517b65e614ad6808d6f6ee34df" +
			"f7310fdc82aebfd904b01e1dc54b2927094b2db68d6f903b68401adebf5a7e08d78ff4ef5d63653a65040cf9bfd4aca7" +
			"984a74d37145986780fc0b16ac451649de6188a7dbdf191f64b5fc5e2ab47b57f7f7276cd419c17a3ca8e1b939ae49e4" +
			"88acba6b965610b5480109c8b17b80e1b7b750dfc7598d5d5011fd2dcc5600a32ef5b52a1ecc820e308aa342721aac09" +
			"43bf6686b64b2579376504ccc493d97e6aed3fb0f9cd71a43dd497f01f17c0e2cb3797aa2a2f256656168e6c496afc5f" +
			"b93246f6b1116398a346f1a641f3b041e989f7914f90cc2c7fff357876e506b50d334ba77c225bc307ba537152f3f161" +
			"0e4eafe595f6d9d90d11faa933a15ef1369546868a7f3a45a96768d40fd9d03412c091c6315cf4fde7cb68606937380d" +
			"b2eaaa707b4c4185c32eddcdd306705e4dc1ffc872eeee475a64dfac86aba41c0618983f8741c5ef68d3a101e8a3b8ca" +
			"c60c905c15fc910840b94c00a0b9d0",
		"0aab4c900501b3e24d7cdf4663326a3a87df5e4843b2cbdb67cbf6e460fec350aa5371b1508f9f4528ecea23c436d94b5e8fcd4f681e30a6ac00a9704a188a03"},
}

func newSealer(t testing.TB) *secrets.Sealer {
	t.Helper()
	s, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeKeyFile puts a key with a known seed into dir in the on-disk format,
// so the vectors run through the same load path as real keys.
func writeKeyFile(t *testing.T, dir, kid string, seed []byte) {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"kid": kid, "algorithm": "ed25519",
		"seed_b64": base64.StdEncoding.EncodeToString(seed), "created_at": time.Now().UTC()})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, kid+".json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRFC8032Vectors(t *testing.T) {
	t.Parallel()
	for _, v := range rfc8032 {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "keys")
			writeKeyFile(t, dir, "rfc", unhex(t, v.seed))
			ks, err := signing.Open(dir, newSealer(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(ks.Active().Public); got != v.pub {
				t.Fatalf("public key %s, want %s", got, v.pub)
			}
			msg := unhex(t, v.msg)
			kid, sig := ks.Sign(msg)
			if kid != "rfc" {
				t.Fatalf("kid %q", kid)
			}
			if got := hex.EncodeToString(sig); got != v.sig {
				t.Fatalf("signature\n got %s\nwant %s", got, v.sig)
			}
			if !ed25519.Verify(unhex(t, v.pub), msg, sig) {
				t.Fatal("vector does not verify")
			}
			if len(msg) > 0 {
				msg[len(msg)-1] ^= 1
				if ed25519.Verify(unhex(t, v.pub), msg, sig) {
					t.Fatal("flipped message still verifies")
				}
			}
		})
	}
	if n := len(unhex(t, rfc8032[3].msg)); n != 1023 {
		t.Fatalf("TEST 1024 message is %d bytes, want 1023", n)
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestKeyFilesAndRotation(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "keys")
	sealer := newSealer(t)
	ks, err := signing.Open(dir, sealer)
	if err != nil {
		t.Fatal(err)
	}
	first := ks.Active()
	if !strings.HasPrefix(first.ID, "ed25519-") || len(ks.Keys()) != 1 {
		t.Fatalf("first key %q, %d keys", first.ID, len(ks.Keys()))
	}
	second, err := ks.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID || ks.Active().ID != second.ID {
		t.Fatalf("rotate: active %q, first %q, new %q", ks.Active().ID, first.ID, second.ID)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("key dir mode %v, want 0700", m)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 { // two keys + active pointer, no temp files left
		t.Errorf("key dir holds %d entries, want 3", len(entries))
	}
	for _, e := range entries {
		if m := mode(t, filepath.Join(dir, e.Name())); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), m)
		}
	}

	// Reopening from disk gives the same set and the same active key.
	again, err := signing.Open(dir, sealer)
	if err != nil {
		t.Fatal(err)
	}
	set := again.PublicSet()
	if set.ActiveKID != second.ID || len(set.Keys) != 2 || set.Keys[0].KID != first.ID || set.Keys[1].KID != second.ID {
		t.Fatalf("reopened set: %+v", set)
	}
	for _, k := range set.Keys {
		raw, err := k.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if k.B64 != base64.StdEncoding.EncodeToString(raw) || k.B64URL != base64.RawURLEncoding.EncodeToString(raw) || k.Algorithm != "ed25519" {
			t.Fatalf("encodings disagree: %+v", k)
		}
	}
	if set.SigningFormat.ReplayToleranceSeconds != 300 || len(set.Usage) != 3 {
		t.Fatalf("format: %+v usage %v", set.SigningFormat, set.Usage)
	}
	// What the old key signed still verifies against the reopened set.
	msg := []byte("signed before rotation")
	sig := ed25519.Sign(ed25519.NewKeyFromSeed(mustSeed(t, dir, first.ID, sealer)), msg)
	pub, ok := again.Lookup(first.ID)
	if !ok || !ed25519.Verify(pub, msg, sig) {
		t.Fatal("old key no longer verifies after rotation")
	}
}

func mustSeed(t *testing.T, dir, kid string, sealer *secrets.Sealer) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, kid+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Seed   string `json:"seed_b64"`
		Sealed string `json:"seed_sealed"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Seed != "" {
		t.Fatalf("%s holds its seed in the clear", kid)
	}
	seed, err := sealer.Open("signing/seed "+kid, f.Sealed)
	if err != nil {
		t.Fatal(err)
	}
	return seed
}

// Key files hold their seed sealed under the master key; a
// plaintext file of an older version is re-written sealed on load (same
// key), and a copy of the directory does not load under another key.
func TestKeyFilesSealedAndMigrated(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "keys")
	seed := unhex(t, rfc8032[0].seed)
	writeKeyFile(t, dir, "legacy", seed)
	sealer := newSealer(t)
	ks, err := signing.Open(dir, sealer)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(ks.Active().Public) != rfc8032[0].pub {
		t.Fatal("migration changed the key")
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "legacy.json"))
	if strings.Contains(string(raw), "seed_b64") || strings.Contains(string(raw), base64.StdEncoding.EncodeToString(seed)) {
		t.Fatalf("plaintext seed left on disk: %s", raw)
	}
	if got := mustSeed(t, dir, "legacy", sealer); hex.EncodeToString(got) != rfc8032[0].seed {
		t.Fatal("sealed seed differs")
	}
	if m := mode(t, filepath.Join(dir, "legacy.json")); m != 0o600 {
		t.Fatalf("mode %v", m)
	}
	// New keys are sealed from the start.
	k, err := ks.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	mustSeed(t, dir, k.ID, sealer)
	// Another master key opens nothing and changes nothing.
	before, _ := os.ReadFile(filepath.Join(dir, k.ID+".json"))
	_, err = signing.Open(dir, newSealer(t))
	if err == nil || !strings.Contains(err.Error(), "--master-key-file") {
		t.Fatalf("opened under another master key: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, k.ID+".json")); string(after) != string(before) {
		t.Fatal("a failed open rewrote a key file")
	}
}

func TestOpenRefusesUnsafeOrBrokenKeyFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"world readable", func(t *testing.T, dir string) {
			writeKeyFile(t, dir, "k1", make([]byte, 32))
			os.Chmod(filepath.Join(dir, "k1.json"), 0o644)
		}, "readable by others"},
		{"not json", func(t *testing.T, dir string) {
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, "k1.json"), []byte("{"), 0o600)
		}, "malformed key file"},
		{"short seed", func(t *testing.T, dir string) {
			writeKeyFile(t, dir, "k1", make([]byte, 31))
		}, "not an ed25519 key file"},
		{"dangling active", func(t *testing.T, dir string) {
			writeKeyFile(t, dir, "k1", make([]byte, 32))
			os.WriteFile(filepath.Join(dir, "active"), []byte("k2\n"), 0o600)
		}, `names kid "k2"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "keys")
			tc.setup(t, dir)
			_, err := signing.Open(dir, newSealer(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseHeader(t *testing.T) {
	t.Parallel()
	sig := strings.Repeat("ab", 64)
	good := []struct {
		in   string
		path string
	}{
		{"t=1700000000,kid=k1,path=/api/v1/x,sig=" + sig, "/api/v1/x"},
		{"t=1700000000,kid=k1,path=/a,b=c,sig=d,sig=" + sig, "/a,b=c,sig=d"},
		{"t=1700000000,kid=k1,path=/,sig=" + sig, "/"},
	}
	for _, g := range good {
		s, err := signing.ParseHeader(g.in)
		if err != nil {
			t.Fatalf("%q: %v", g.in, err)
		}
		if s.T != 1700000000 || s.KID != "k1" || s.Path != g.path || hex.EncodeToString(s.Sig) != sig {
			t.Fatalf("%q parsed as %+v", g.in, s)
		}
		if back := signing.FormatHeader(s.T, s.KID, s.Path, s.Sig); back != g.in {
			t.Fatalf("round trip %q -> %q", g.in, back)
		}
	}
	bad := []struct{ in, why string }{
		{"kid=k1,t=1,path=/,sig=" + sig, "must start with t="},
		{"t=1,path=/,sig=" + sig, "kid missing"},
		{"t=abc,kid=k1,path=/,sig=" + sig, "positive unix timestamp"},
		{"t=-5,kid=k1,path=/,sig=" + sig, "positive unix timestamp"},
		{"t=+5,kid=k1,path=/,sig=" + sig, "positive unix timestamp"},
		{"t=1,kid=,path=/,sig=" + sig, "kid is empty"},
		{"t=1,kid=k1,sig=" + sig, "path missing"},
		{"t=1,kid=k1,path=x,sig=" + sig, "path must start with /"},
		{"t=1,kid=k1,path=/", "sig missing"},
		{"t=1,kid=k1,path=/,sig=" + sig[:126], "128 hex"},
		{"t=1,kid=k1,path=/,sig=" + sig + "00", "128 hex"},
		{"t=1,kid=k1,path=/,sig=" + strings.Repeat("zz", 64), "not hex"},
	}
	for _, b := range bad {
		_, err := signing.ParseHeader(b.in)
		if !errors.Is(err, signing.ErrMalformed) || !strings.Contains(err.Error(), b.why) {
			t.Errorf("%q: err %v, want ErrMalformed mentioning %q", b.in, err, b.why)
		}
	}
	if _, err := signing.ParseHeader(""); !errors.Is(err, signing.ErrMissing) {
		t.Errorf("empty header: %v", err)
	}
}

// countingSource serves a key set that the test can change, counting fetches.
type countingSource struct {
	mu    sync.Mutex
	set   signing.PublicKeySet
	calls int
}

func (c *countingSource) fetch(context.Context) (signing.PublicKeySet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return c.set, nil
}

func (c *countingSource) publish(ks *signing.KeySet) {
	c.mu.Lock()
	c.set = ks.PublicSet()
	c.mu.Unlock()
}

func (c *countingSource) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.calls }

func newKeys(t *testing.T) *signing.KeySet {
	t.Helper()
	ks, err := signing.Open(filepath.Join(t.TempDir(), "keys"), newSealer(t))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestVerifyReplayWindowPathAndTamper(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	start := time.Unix(1_800_000_000, 0)
	serverClock := clockpkg.NewFakeClock(start)
	signer := signing.NewSigner(ks, serverClock)
	body := []byte(`{"statusCode":200,"message":"ok"}`)
	header := signer.Sign("/api/v1/meta/public-key", body)

	src := &countingSource{}
	src.publish(ks)
	clientClock := clockpkg.NewFakeClock(start)
	v := signing.NewVerifier(signing.VerifierOptions{Source: src.fetch, Clock: clientClock})
	ctx := context.Background()

	cases := []struct {
		name   string
		offset time.Duration
		path   string
		body   []byte
		want   error
	}{
		{"fresh", 0, "/api/v1/meta/public-key", body, nil},
		{"300s late", 300 * time.Second, "/api/v1/meta/public-key", body, nil},
		{"301s late", 301 * time.Second, "/api/v1/meta/public-key", body, signing.ErrReplayWindow},
		{"300s early", -300 * time.Second, "/api/v1/meta/public-key", body, nil},
		{"301s early", -301 * time.Second, "/api/v1/meta/public-key", body, signing.ErrReplayWindow},
		{"other path", 0, "/api/v1/auth/available-regions", body, signing.ErrPathMismatch},
		{"tampered body", 0, "/api/v1/meta/public-key", []byte(`{"statusCode":200,"message":"OK"}`), signing.ErrBadSignature},
		{"empty body", 0, "/api/v1/meta/public-key", nil, signing.ErrBadSignature},
	}
	for _, tc := range cases {
		clientClock.Set(start.Add(tc.offset))
		_, err := v.Verify(ctx, header, tc.path, tc.body)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	// A signature with a flipped bit never verifies.
	clientClock.Set(start)
	s, _ := signing.ParseHeader(header)
	s.Sig[10] ^= 0x40
	if _, err := v.Verify(ctx, signing.FormatHeader(s.T, s.KID, s.Path, s.Sig), s.Path, body); !errors.Is(err, signing.ErrBadSignature) {
		t.Errorf("flipped signature bit: %v", err)
	}
	if got := src.count(); got != 1 {
		t.Errorf("key set fetched %d times, want 1 (cached)", got)
	}
}

func TestUnknownKidRefetchesExactlyOnce(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	clock := clockpkg.NewFakeClock(time.Unix(1_800_000_000, 0))
	signer := signing.NewSigner(ks, clock)
	src := &countingSource{}
	src.publish(ks) // the client will see only the first key at first
	v := signing.NewVerifier(signing.VerifierOptions{Source: src.fetch, Clock: clock})
	ctx := context.Background()
	body := []byte("hello")

	if _, err := v.Verify(ctx, signer.Sign("/x", body), "/x", body); err != nil {
		t.Fatal(err)
	}
	if src.count() != 1 {
		t.Fatalf("first verify fetched %d times", src.count())
	}
	if _, err := ks.Rotate(); err != nil {
		t.Fatal(err)
	}
	// The server signs with a kid the client has not seen and the source
	// does not publish yet: exactly one refetch, then ErrUnknownKey.
	h := signer.Sign("/x", body)
	if _, err := v.Verify(ctx, h, "/x", body); !errors.Is(err, signing.ErrUnknownKey) {
		t.Fatalf("unpublished kid: %v", err)
	}
	if src.count() != 2 {
		t.Fatalf("unknown kid caused %d fetches in total, want 2", src.count())
	}
	// Once published, the next unknown-kid verify refetches once and passes;
	// later ones use the cache.
	src.publish(ks)
	for i := 0; i < 3; i++ {
		if _, err := v.Verify(ctx, h, "/x", body); err != nil {
			t.Fatal(err)
		}
	}
	if src.count() != 3 {
		t.Fatalf("fetches %d, want 3", src.count())
	}
	// After the 24 h cache lifetime a known kid refreshes once too.
	clock.Advance(25 * time.Hour)
	h = signer.Sign("/x", body)
	if _, err := v.Verify(ctx, h, "/x", body); err != nil {
		t.Fatal(err)
	}
	if src.count() != 4 {
		t.Fatalf("fetches after TTL %d, want 4", src.count())
	}
}

func TestMinRefetchLimitsForgedKids(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	clock := clockpkg.NewFakeClock(time.Unix(1_800_000_000, 0))
	src := &countingSource{}
	src.publish(ks)
	v := signing.NewVerifier(signing.VerifierOptions{Source: src.fetch, Clock: clock, MinRefetch: time.Minute})
	ctx := context.Background()
	sig := make([]byte, 64)
	for i := 0; i < 5; i++ {
		h := signing.FormatHeader(clock.Now().Unix(), "forged-"+string(rune('a'+i)), "/x", sig)
		if _, err := v.Verify(ctx, h, "/x", nil); !errors.Is(err, signing.ErrUnknownKey) {
			t.Fatalf("forged kid: %v", err)
		}
	}
	if src.count() != 1 {
		t.Fatalf("5 forged kids within MinRefetch caused %d fetches, want 1", src.count())
	}
	clock.Advance(2 * time.Minute)
	h := signing.FormatHeader(clock.Now().Unix(), "forged-z", "/x", sig)
	v.Verify(ctx, h, "/x", nil)
	if src.count() != 2 {
		t.Fatalf("after MinRefetch: %d fetches, want 2", src.count())
	}
}

type identityPayload struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	Exp    int64  `json:"exp"`
}

func TestClaimsRoundTripAndTamper(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	in := identityPayload{UserID: "usr_1", Email: "a@example.com", Exp: 1_800_000_300}
	c, err := ks.SignClaim(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SignatureHex) != 128 || strings.ContainsAny(c.PayloadB64, "+/=") {
		t.Fatalf("claim shape: %+v", c)
	}
	// The signature is over the UTF-8 bytes of payload_b64 exactly.
	sig, _ := hex.DecodeString(c.SignatureHex)
	if !ed25519.Verify(ks.Active().Public, []byte(c.PayloadB64), sig) {
		t.Fatal("signature is not over payload_b64")
	}
	var out identityPayload
	if err := signing.VerifyClaim(c, &out, ks.Active().Public); err != nil || out != in {
		t.Fatalf("round trip: %v %+v", err, out)
	}
	// Through a verifier, after a rotation: the old claim still verifies
	// by kid, and one without kid verifies by trying every key.
	src := &countingSource{}
	old := c
	if _, err := ks.Rotate(); err != nil {
		t.Fatal(err)
	}
	src.publish(ks)
	v := signing.NewVerifier(signing.VerifierOptions{Source: src.fetch})
	if err := v.VerifyClaim(context.Background(), old, &out); err != nil {
		t.Fatalf("old claim after rotation: %v", err)
	}
	noKid := old
	noKid.KID = ""
	if err := v.VerifyClaim(context.Background(), noKid, nil); err != nil {
		t.Fatalf("claim without kid: %v", err)
	}

	other, _ := ks.SignClaim(identityPayload{UserID: "usr_2"})
	tampered := []struct {
		name string
		c    signing.Claim
	}{
		{"payload swapped", signing.Claim{PayloadB64: other.PayloadB64, SignatureHex: c.SignatureHex}},
		{"same payload, other JSON bytes", signing.Claim{PayloadB64: base64.RawURLEncoding.EncodeToString(mustIndented(in)), SignatureHex: c.SignatureHex}},
		{"signature bit", signing.Claim{PayloadB64: c.PayloadB64, SignatureHex: flipHex(c.SignatureHex)}},
		{"signature short", signing.Claim{PayloadB64: c.PayloadB64, SignatureHex: c.SignatureHex[:126]}},
		{"signature not hex", signing.Claim{PayloadB64: c.PayloadB64, SignatureHex: strings.Repeat("g", 128)}},
	}
	for _, tc := range tampered {
		if err := signing.VerifyClaim(tc.c, nil, ks.Active().Public, ks.Keys()[0].Public); !errors.Is(err, signing.ErrBadClaim) {
			t.Errorf("%s: err %v, want ErrBadClaim", tc.name, err)
		}
	}
}

func mustIndented(v any) []byte { b, _ := json.MarshalIndent(v, "", " "); return b }

func flipHex(s string) string {
	b, _ := hex.DecodeString(s)
	b[0] ^= 1
	return hex.EncodeToString(b)
}

// BenchmarkSign1KiB is the raw cost the control plane adds to a 1 KiB
// response: building "<t>.<body>", one ED25519 signature, the header string.
func BenchmarkSign1KiB(b *testing.B) {
	ks, err := signing.Open(filepath.Join(b.TempDir(), "keys"), newSealer(b))
	if err != nil {
		b.Fatal(err)
	}
	s := signing.NewSigner(ks, nil)
	body := []byte(strings.Repeat("x", 1024))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var n uint64
	for b.Loop() {
		n++
		binary.LittleEndian.PutUint64(body, n) // a new body each time: no memo hit
		_ = s.Sign("/api/v1/users/auth/me", body)
	}
}

// BenchmarkSign1KiBRepeated is the same body answered again within the
// second (a polling client): the signature comes from the memo.
func BenchmarkSign1KiBRepeated(b *testing.B) {
	ks, err := signing.Open(filepath.Join(b.TempDir(), "keys"), newSealer(b))
	if err != nil {
		b.Fatal(err)
	}
	s := signing.NewSigner(ks, nil)
	body := []byte(strings.Repeat("x", 1024))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Sign("/api/v1/users/auth/me", body)
	}
}

// BenchmarkVerify1KiB is the client side of the same response.
func BenchmarkVerify1KiB(b *testing.B) {
	ks, err := signing.Open(filepath.Join(b.TempDir(), "keys"), newSealer(b))
	if err != nil {
		b.Fatal(err)
	}
	s := signing.NewSigner(ks, nil)
	body := []byte(strings.Repeat("x", 1024))
	h := s.Sign("/p", body)
	v := signing.NewVerifier(signing.VerifierOptions{Source: signing.StaticKeySource(ks.PublicSet())})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := v.Verify(context.Background(), h, "/p", body); err != nil {
			b.Fatal(err)
		}
	}
}

// keySetServer serves ks's public set at the public-key path, signed by
// signer — an honest control plane when signer uses ks, an impostor else.
func keySetServer(t *testing.T, ks *signing.KeySet, signer *signing.Signer) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(map[string]any{"statusCode": 200, "message": "Signing key set", "data": ks.PublicSet()})
		w.Header().Set(signing.Header, signer.Sign(r.URL.EscapedPath(), body))
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHTTPKeySourceChecksTheSetsOwnSignature(t *testing.T) {
	t.Parallel()
	ks, other := newKeys(t), newKeys(t)
	ctx := context.Background()
	set, err := signing.HTTPKeySource(nil, keySetServer(t, ks, signing.NewSigner(ks, nil)))(ctx)
	if err != nil || set.ActiveKID != ks.Active().ID {
		t.Fatalf("honest set: %v %+v", err, set)
	}
	_, err = signing.HTTPKeySource(nil, keySetServer(t, ks, signing.NewSigner(other, nil)))(ctx)
	if err == nil || !strings.Contains(err.Error(), "which it does not contain") {
		t.Fatalf("set signed by a foreign key: %v", err)
	}
}

// Many requests naming the same new kid at once share one refetch.
func TestConcurrentUnknownKidShareOneRefetch(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	signer := signing.NewSigner(ks, nil)
	src := &countingSource{}
	src.publish(ks)
	v := signing.NewVerifier(signing.VerifierOptions{Source: src.fetch})
	body := []byte("x")
	if _, err := v.Verify(context.Background(), signer.Sign("/x", body), "/x", body); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Rotate(); err != nil {
		t.Fatal(err)
	}
	src.publish(ks)
	h := signer.Sign("/x", body)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.Verify(context.Background(), h, "/x", body); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if src.count() != 2 {
		t.Fatalf("50 concurrent verifies of a new kid fetched %d times in total, want 2", src.count())
	}
}
