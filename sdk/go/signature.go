package deckhand

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SignatureHeader carries the control plane's signature of an answer:
//
//	X-Service-Signature: t=<unix_ts>,kid=<key_id>,path=<url_path>,sig=<128 hex>
//
// The signed data is "<t>.<body>", signed with the ED25519 key kid of the
// set published at PublicKeyPath.
const SignatureHeader = "X-Service-Signature"

// PublicKeyPath is where the control plane publishes its signing keys.
const PublicKeyPath = "/api/v1/meta/public-key"

const (
	// KeyCacheTTL is how long a fetched key set is used before it is
	// fetched again.
	KeyCacheTTL = 24 * time.Hour
	// ReplayTolerance is how far a signature's t may be from this
	// machine's clock, either way.
	ReplayTolerance = 300 * time.Second
	// minRefetch is the least time between two fetches unknown kids
	// cause, so forged kids cannot turn a client into a request
	// amplifier; the first answer signed with a rotated key fetches at
	// once.
	minRefetch = 5 * time.Second
)

// Signature verification errors (wrapped in a *SignatureError).
var (
	ErrSignatureMissing   = errors.New("no " + SignatureHeader + " header")
	ErrSignatureMalformed = errors.New("malformed " + SignatureHeader + " header")
	ErrUnknownKey         = errors.New("signed with an unknown key")
	ErrReplayWindow       = errors.New("signature timestamp outside the replay window")
	ErrPathMismatch       = errors.New("signed path differs from the requested path")
	ErrBadSignature       = errors.New("signature: does not verify")
	ErrBindingMissing     = errors.New("no " + BindingHeader + " header on an answer that was asked for one")
	ErrBindingMalformed   = errors.New("malformed " + BindingHeader + " header")
	ErrStatusMismatch     = errors.New("the answer's status is not the one signed")
)

// NonceHeader asks the control plane to bind its answer to this request:
// the answer then carries BindingHeader, a second signature over the
// status, method, path, ETag, this nonce and the body's SHA-256. The
// client sends a fresh nonce with every request, so an answer signed for
// another request (or relabelled with another status) is refused.
const NonceHeader = "X-Service-Nonce"

// BindingHeader carries the binding signature:
//
//	X-Service-Binding: t=<unix_ts>,kid=<key_id>,status=<http status>,sig=<128 hex>
const BindingHeader = "X-Service-Binding"

// newNonce is 24 characters of base64url from 18 random bytes.
func newNonce() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// binding is what a binding signature covers.
type binding struct {
	status       int
	method, path string
	etag, nonce  string
	body         []byte
}

// bindingData is the signed data, one field a line:
// deckhand-binding-v1, t, status, method, path, etag, nonce, hex sha256(body).
func bindingData(t int64, b binding) []byte {
	sum := sha256.Sum256(b.body)
	out := make([]byte, 0, 64+len(b.method)+len(b.path)+len(b.etag)+len(b.nonce)+2*len(sum))
	out = append(out, "deckhand-binding-v1\n"...)
	out = strconv.AppendInt(out, t, 10)
	out = append(out, '\n')
	out = strconv.AppendInt(out, int64(b.status), 10)
	for _, f := range []string{b.method, b.path, b.etag, b.nonce} {
		out = append(out, '\n')
		out = append(out, f...)
	}
	out = append(out, '\n')
	return hex.AppendEncode(out, sum[:])
}

type bindingSig struct {
	t      int64
	kid    string
	status int
	sig    []byte
}

func parseBinding(v string) (bindingSig, error) {
	var b bindingSig
	if v == "" {
		return b, ErrBindingMissing
	}
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrBindingMalformed, why) }
	var parts [4]string
	rest, n := v, 0
	for ; n < len(parts) && rest != ""; n++ {
		parts[n], rest, _ = strings.Cut(rest, ",")
	}
	if n != len(parts) || rest != "" || strings.HasSuffix(v, ",") {
		return b, bad("want t=,kid=,status=,sig=")
	}
	ts, ok1 := strings.CutPrefix(parts[0], "t=")
	kid, ok2 := strings.CutPrefix(parts[1], "kid=")
	st, ok3 := strings.CutPrefix(parts[2], "status=")
	sh, ok4 := strings.CutPrefix(parts[3], "sig=")
	if !ok1 || !ok2 || !ok3 || !ok4 || kid == "" {
		return b, bad("want t=,kid=,status=,sig=")
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || t <= 0 {
		return b, bad("t is not a unix timestamp")
	}
	code, err := strconv.Atoi(st)
	if err != nil || len(st) != 3 || code < 100 || code > 599 {
		return b, bad("status is not a 3-digit HTTP status")
	}
	sig, err := hex.DecodeString(sh)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return b, bad("sig is not 128 hex characters")
	}
	return bindingSig{t: t, kid: kid, status: code, sig: sig}, nil
}

// verifyBinding checks header against the request sent and the answer
// received: the status first (so a relabelled answer says so), the
// replay window, then the signature.
func (v *verifier) verifyBinding(ctx context.Context, header string, b binding) error {
	s, err := parseBinding(header)
	if err != nil {
		return err
	}
	if s.status != b.status {
		return fmt.Errorf("%w: signed %d, received %d", ErrStatusMismatch, s.status, b.status)
	}
	skew := v.now().Sub(time.Unix(s.t, 0))
	if skew > ReplayTolerance || skew < -ReplayTolerance {
		return fmt.Errorf("%w: binding t=%d is %s from now", ErrReplayWindow, s.t, skew.Round(time.Second))
	}
	pub, err := v.key(ctx, s.kid)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, bindingData(s.t, b), s.sig) {
		return fmt.Errorf("%w: the binding (status, method, path, ETag, nonce or body) differs from what was signed", ErrBadSignature)
	}
	return nil
}

// checkEnvelopeStatus refuses a control-plane envelope whose statusCode
// is not the status it came with.
func checkEnvelopeStatus(status int, body []byte) error {
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var env struct {
		StatusCode *int `json:"statusCode"`
	}
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return envelopeStatus(status, env.StatusCode)
}

// envelopeStatus refuses an envelope's statusCode (nil: none) that is not
// the status its answer came with.
func envelopeStatus(status int, statusCode *int) error {
	if statusCode != nil && *statusCode != status {
		return fmt.Errorf("%w: the signed body says %d, the answer came as %d", ErrStatusMismatch, *statusCode, status)
	}
	return nil
}

// verifier checks answers against the control plane's key set, fetched
// lazily, kept KeyCacheTTL, and fetched again when an answer names a kid
// the set lacks.
type verifier struct {
	base  string
	hc    *http.Client
	now   func() time.Time
	cache KeyCache // nil: none

	mu        sync.Mutex
	keys      map[string]ed25519.PublicKey
	fetchedAt time.Time
	unknownAt time.Time // last fetch an unknown kid caused
	fetches   int
	fetchMu   sync.Mutex
}

type signature struct {
	t    int64
	kid  string
	path string
	sig  []byte
}

// parseSignature reads t and kid from the front and sig from the end, so
// a path holding commas or "=" still parses.
func parseSignature(v string) (signature, error) {
	var s signature
	if v == "" {
		return s, ErrSignatureMissing
	}
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrSignatureMalformed, why) }
	rest, ok := strings.CutPrefix(v, "t=")
	if !ok {
		return s, bad("must start with t=")
	}
	ts, rest, ok := strings.Cut(rest, ",kid=")
	if !ok {
		return s, bad("kid missing")
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || t <= 0 {
		return s, bad("t is not a unix timestamp")
	}
	kid, rest, ok := strings.Cut(rest, ",path=")
	if !ok || kid == "" {
		return s, bad("path missing")
	}
	i := strings.LastIndex(rest, ",sig=")
	if i < 0 {
		return s, bad("sig missing")
	}
	sig, err := hex.DecodeString(rest[i+len(",sig="):])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return s, bad("sig is not 128 hex characters")
	}
	return signature{t: t, kid: kid, path: rest[:i], sig: sig}, nil
}

// verify checks header against the path requested (as sent, without the
// query) and the exact body bytes.
func (v *verifier) verify(ctx context.Context, header, path string, body []byte) error {
	s, err := parseSignature(header)
	if err != nil {
		return err
	}
	if s.path != path {
		return fmt.Errorf("%w: signed %q, requested %q", ErrPathMismatch, s.path, path)
	}
	skew := v.now().Sub(time.Unix(s.t, 0))
	if skew > ReplayTolerance || skew < -ReplayTolerance {
		return fmt.Errorf("%w: t=%d is %s from now", ErrReplayWindow, s.t, skew.Round(time.Second))
	}
	pub, err := v.key(ctx, s.kid)
	if err != nil {
		return err
	}
	msg := make([]byte, 0, 21+len(body))
	msg = strconv.AppendInt(msg, s.t, 10)
	msg = append(msg, '.')
	msg = append(msg, body...)
	if !ed25519.Verify(pub, msg, s.sig) {
		return ErrBadSignature
	}
	return nil
}

func (v *verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	now := v.now()
	v.mu.Lock()
	if v.keys == nil && v.cache != nil && v.fetches == 0 {
		// The first look of a process may take the cached set; a kid it
		// lacks (a rotated key) then fetches at once.
		if set, at, ok := v.cache.LoadKeys(v.base); ok && now.Sub(at) < KeyCacheTTL {
			if keys, err := set.keys(); err == nil && len(keys) > 0 {
				v.keys, v.fetchedAt = keys, at
			}
		}
	}
	k, ok := v.keys[kid]
	fresh := !v.fetchedAt.IsZero() && now.Sub(v.fetchedAt) < KeyCacheTTL
	held := !ok && !v.unknownAt.IsZero() && now.Sub(v.unknownAt) < minRefetch
	gen := v.fetches
	had := v.keys != nil
	v.mu.Unlock()
	switch {
	case ok && fresh:
		return k, nil
	case held:
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
	}
	if err := v.refresh(ctx, gen, !ok && had); err != nil {
		if ok {
			return k, nil // a failed refresh keeps the keys it had
		}
		return nil, err
	}
	v.mu.Lock()
	k, ok = v.keys[kid]
	v.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
	}
	return k, nil
}

// refresh fetches the set unless another caller did since gen.
func (v *verifier) refresh(ctx context.Context, gen int, unknown bool) error {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	v.mu.Lock()
	done := v.fetches != gen
	v.mu.Unlock()
	if done {
		return nil
	}
	keys, set, err := v.fetch(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fetches++
	now := v.now()
	if unknown {
		v.unknownAt = now
	}
	if err != nil {
		return err
	}
	v.keys, v.fetchedAt = keys, now
	if v.cache != nil {
		v.cache.StoreKeys(v.base, set, now)
	}
	return nil
}

// KeySet is the control plane's published key set.
type KeySet struct {
	Keys []struct {
		KID       string `json:"kid"`
		Algorithm string `json:"algorithm"`
		Hex       string `json:"public_key_hex"`
	} `json:"keys"`
	ActiveKID string `json:"active_kid"`
}

// KeyCache keeps the control plane's key set between processes, so a
// short-lived program (the CLI) need not fetch it on every start: a set
// younger than KeyCacheTTL is used as fetched, and a kid it lacks fetches
// the set again at once. Options.KeyCache sets one.
type KeyCache interface {
	// LoadKeys answers the set last stored for the control plane at base
	// and when it was fetched.
	LoadKeys(base string) (set KeySet, fetchedAt time.Time, ok bool)
	// StoreKeys keeps a set just fetched (and verified); a cache that
	// cannot keep it costs a fetch next time, nothing more.
	StoreKeys(base string, set KeySet, fetchedAt time.Time)
}

// keys decodes the set's keys.
func (ks KeySet) keys() (map[string]ed25519.PublicKey, error) {
	keys := map[string]ed25519.PublicKey{}
	for _, k := range ks.Keys {
		b, err := hex.DecodeString(k.Hex)
		if k.Algorithm != "ed25519" || err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("key %q is not a 32-byte ed25519 key", k.KID)
		}
		keys[k.KID] = ed25519.PublicKey(b)
	}
	return keys, nil
}

func (v *verifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, KeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.base+PublicKeyPath, nil)
	if err != nil {
		return nil, KeySet{}, err
	}
	resp, err := v.hc.Do(req)
	if err != nil {
		return nil, KeySet{}, fmt.Errorf("fetch the key set: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, KeySet{}, fmt.Errorf("fetch the key set: status %d %v", resp.StatusCode, err)
	}
	var env struct {
		Data KeySet `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, KeySet{}, fmt.Errorf("fetch the key set: %w", err)
	}
	keys, err := env.Data.keys()
	if err != nil {
		return nil, KeySet{}, fmt.Errorf("fetch the key set: %w", err)
	}
	// The set is itself a signed answer: it must verify with a key it
	// holds, so an altered set is refused like any altered answer.
	s, err := parseSignature(resp.Header.Get(SignatureHeader))
	if err != nil {
		return nil, KeySet{}, fmt.Errorf("fetch the key set: %w", err)
	}
	pub, ok := keys[s.kid]
	msg := append(strconv.AppendInt(nil, s.t, 10), '.')
	if !ok || !ed25519.Verify(pub, append(msg, raw...), s.sig) {
		return nil, KeySet{}, fmt.Errorf("fetch the key set: it is not signed by its own key %q: %w", s.kid, ErrBadSignature)
	}
	return keys, env.Data, nil
}

// fetchCount is how many key-set fetches were made (tests).
func (v *verifier) fetchCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fetches
}
