package signing

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"deckhand/platform/clock"
)

// Verification errors; callers match them with errors.Is.
var (
	ErrUnknownKey   = errors.New("signature: unknown kid")
	ErrReplayWindow = errors.New("signature: timestamp outside the replay window")
	ErrPathMismatch = errors.New("signature: signed path differs from the requested path")
	ErrBadSignature = errors.New("signature: does not verify")
)

// KeySource fetches the current public key set.
type KeySource func(ctx context.Context) (PublicKeySet, error)

// DefaultCacheTTL is how long a fetched key set is trusted before it is
// fetched again (docs/spec/interface.md: cache at least 24 hours).
const DefaultCacheTTL = 24 * time.Hour

// VerifierOptions configures a Verifier.
type VerifierOptions struct {
	// Source fetches keys; HTTPKeySource is the usual one. It trusts
	// whatever set it returns.
	Source KeySource
	// Fetch, when set, replaces Source with a pinning verifier: the set is
	// fetched as it arrived and accepted only by AcceptKeySet against the
	// keys already trusted (Pinned, then Trusted, then what it accepted
	// since), so a new kid comes in only from a set a trusted key signed.
	// With nothing trusted yet, TrustFirst takes the first set on its own
	// signature (FirstKeySet); without it, nothing is accepted.
	Fetch func(ctx context.Context) (FetchedKeySet, error)
	// Pinned keys stay trusted whatever a fetched set says. With pins, a
	// fetched set is accepted only when a pinned key signed it: a key
	// taken on first use, or endorsed by such a key, could be a man in
	// the middle's, and only a pin can say it is not.
	Pinned map[string]ed25519.PublicKey
	// Trusted are the keys a previous run accepted (kept on disk by the
	// caller): trusted from the start, replaced by the next accepted set.
	// With pins, the caller passes only keys a pin endorsed (PinnedOnly).
	Trusted    map[string]ed25519.PublicKey
	TrustFirst bool
	// OnAccept is called with the keys of each set Fetch brought and the
	// verifier accepted (Pinned included), so the caller keeps them; never
	// with a refused one.
	OnAccept func(keys map[string]ed25519.PublicKey)
	Clock    clock.Clock // nil: system clock
	// CacheTTL after which a known kid still triggers a refresh (default 24h).
	CacheTTL time.Duration
	// MinRefetch is the least time between two fetches caused by unknown
	// kids, so a stream of forged kids cannot turn the verifier into a
	// request amplifier. Zero allows a refetch for every unknown kid
	// (still at most one per unknown kid per call).
	MinRefetch time.Duration
	// Tolerance overrides the replay window (default ReplayTolerance s).
	Tolerance time.Duration
}

// Verifier checks signed responses and claims for clients and the agent.
type Verifier struct {
	opt VerifierOptions

	mu        sync.RWMutex
	keys      map[string]ed25519.PublicKey
	fetchedAt time.Time // last accepted set
	triedAt   time.Time // last fetch, accepted or not
	fetches   int

	fetchMu sync.Mutex // one fetch at a time; waiters reuse its result
}

// NewVerifier builds a verifier; it fetches keys lazily on first use.
func NewVerifier(opt VerifierOptions) *Verifier {
	if opt.Clock == nil {
		opt.Clock = clock.SystemClock{}
	}
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.Tolerance <= 0 {
		opt.Tolerance = ReplayTolerance * time.Second
	}
	v := &Verifier{opt: opt, keys: map[string]ed25519.PublicKey{}}
	maps.Copy(v.keys, opt.Trusted)
	maps.Copy(v.keys, opt.Pinned)
	return v
}

// PinnedOnly is the part of trusted that is pinned (the same kid, the
// same key); with no pins, trusted whole.
func PinnedOnly(trusted, pinned map[string]ed25519.PublicKey) map[string]ed25519.PublicKey {
	if len(pinned) == 0 {
		return maps.Clone(trusted)
	}
	out := map[string]ed25519.PublicKey{}
	for kid, k := range trusted {
		if p, ok := pinned[kid]; ok && p.Equal(k) {
			out[kid] = k
		}
	}
	return out
}

// Keys is a copy of the keys the verifier trusts now.
func (v *Verifier) Keys() map[string]ed25519.PublicKey {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return maps.Clone(v.keys)
}

// Fetches counts key-set fetches made so far.
func (v *Verifier) Fetches() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.fetches
}

// key returns the public key for kid, fetching the set when the cache is
// empty, stale, or does not know kid.
func (v *Verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	now := v.opt.Clock.Now()
	v.mu.RLock()
	k, ok := v.keys[kid]
	fresh := !v.fetchedAt.IsZero() && now.Sub(v.fetchedAt) < v.opt.CacheTTL
	gen := v.fetches
	held := v.heldOff(now)
	v.mu.RUnlock()
	if ok && fresh {
		return k, nil
	}
	if held {
		if ok {
			return k, nil
		}
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
	}
	if err := v.refresh(ctx, gen); err != nil {
		if ok { // keep verifying with what we had if the refresh fails
			return k, nil
		}
		return nil, err
	}
	v.mu.RLock()
	k, ok = v.keys[kid]
	v.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
	}
	return k, nil
}

// heldOff reports whether MinRefetch forbids another fetch now: one was
// tried (accepted or not) less than MinRefetch ago. Call with mu held.
func (v *Verifier) heldOff(now time.Time) bool {
	return v.opt.MinRefetch > 0 && !v.triedAt.IsZero() && now.Sub(v.triedAt) < v.opt.MinRefetch
}

// ensure fetches the set when the cache is empty or stale.
func (v *Verifier) ensure(ctx context.Context) error {
	now := v.opt.Clock.Now()
	v.mu.RLock()
	fresh := !v.fetchedAt.IsZero() && now.Sub(v.fetchedAt) < v.opt.CacheTTL
	gen := v.fetches
	held := v.heldOff(now)
	have := len(v.keys) > 0
	v.mu.RUnlock()
	if fresh || (held && have) {
		return nil
	}
	return v.refresh(ctx, gen)
}

// refresh fetches the set unless another caller already did since gen.
func (v *Verifier) refresh(ctx context.Context, gen int) error {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	v.mu.RLock()
	done := v.fetches != gen
	v.mu.RUnlock()
	if done {
		return nil
	}
	keys, err := v.fetch(ctx)
	now := v.opt.Clock.Now()
	v.mu.Lock()
	v.fetches++ // a refused or failed fetch counts against MinRefetch too
	v.triedAt = now
	if err == nil {
		v.keys, v.fetchedAt = keys, now
	}
	v.mu.Unlock()
	if err != nil {
		return err
	}
	if v.opt.Fetch != nil && v.opt.OnAccept != nil {
		v.opt.OnAccept(maps.Clone(keys))
	}
	return nil
}

// fetch gets the next key set: from Source as it says, or from Fetch as
// the keys trusted now accept it.
func (v *Verifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	if v.opt.Fetch != nil {
		f, err := v.opt.Fetch(ctx)
		if err != nil {
			return nil, fmt.Errorf("signature: fetch public keys: %w", err)
		}
		v.mu.RLock()
		trusted := maps.Clone(v.keys)
		v.mu.RUnlock()
		now := v.opt.Clock.Now()
		var keys map[string]ed25519.PublicKey
		switch {
		case len(v.opt.Pinned) > 0:
			// Only a pin endorses: a key accepted since, if it were not
			// the control plane's, must not vouch for more keys.
			keys, err = AcceptKeySet(v.opt.Pinned, f, now, v.opt.Tolerance)
		case len(trusted) > 0:
			keys, err = AcceptKeySet(trusted, f, now, v.opt.Tolerance)
		case v.opt.TrustFirst:
			keys, err = FirstKeySet(f, now, v.opt.Tolerance)
		default:
			err = fmt.Errorf("%w: no key is pinned", ErrKeySetUnendorsed)
		}
		if err != nil {
			return nil, fmt.Errorf("signature: fetched key set refused: %w", err)
		}
		maps.Copy(keys, v.opt.Pinned)
		return keys, nil
	}
	if v.opt.Source == nil {
		return nil, errors.New("signature: verifier has no key source")
	}
	set, err := v.opt.Source(ctx)
	if err != nil {
		return nil, fmt.Errorf("signature: fetch public keys: %w", err)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, pk := range set.Keys {
		raw, err := pk.Decode()
		if err != nil {
			return nil, fmt.Errorf("signature: fetched key set: %w", err)
		}
		keys[pk.KID] = raw
	}
	return keys, nil
}

// Verify checks a response: header value, the path the client requested
// (as sent on the wire, without the query) and the exact body bytes.
func (v *Verifier) Verify(ctx context.Context, header, path string, body []byte) (Signature, error) {
	s, err := ParseHeader(header)
	if err != nil {
		return s, err
	}
	if s.Path != path {
		return s, fmt.Errorf("%w: signed %q, requested %q", ErrPathMismatch, s.Path, path)
	}
	now := v.opt.Clock.Now()
	skew := now.Sub(time.Unix(s.T, 0))
	if skew > v.opt.Tolerance || skew < -v.opt.Tolerance {
		return s, fmt.Errorf("%w: t=%d is %s from now", ErrReplayWindow, s.T, skew.Round(time.Second))
	}
	pub, err := v.key(ctx, s.KID)
	if err != nil {
		return s, err
	}
	if !ed25519.Verify(pub, SignedData(s.T, body), s.Sig) {
		return s, ErrBadSignature
	}
	return s, nil
}

// VerifyResponse verifies an *http.Response whose body the caller already
// read into body: its signature, and that an envelope body says the
// status it came with (CheckEnvelopeStatus).
func (v *Verifier) VerifyResponse(resp *http.Response, body []byte) (Signature, error) {
	ctx := context.Background()
	if resp.Request != nil {
		ctx = resp.Request.Context()
	}
	path := ""
	if resp.Request != nil && resp.Request.URL != nil {
		path = resp.Request.URL.EscapedPath()
		if path == "" {
			path = "/"
		}
	}
	s, err := v.Verify(ctx, resp.Header.Get(Header), path, body)
	if err != nil {
		return s, err
	}
	return s, CheckEnvelopeStatus(resp.StatusCode, body)
}

// VerifyClaim checks a claim against the key named by its kid (or any
// known key when it names none) and decodes its payload into dst.
func (v *Verifier) VerifyClaim(ctx context.Context, c Claim, dst any) error {
	if c.KID != "" {
		pub, err := v.key(ctx, c.KID)
		if err != nil {
			return err
		}
		return VerifyClaim(c, dst, pub)
	}
	if err := v.ensure(ctx); err != nil {
		return err
	}
	v.mu.RLock()
	pubs := make([]ed25519.PublicKey, 0, len(v.keys))
	for _, k := range v.keys {
		pubs = append(pubs, k)
	}
	v.mu.RUnlock()
	return VerifyClaim(c, dst, pubs...)
}

// PublicKeyPath is where the control plane serves its key set.
const PublicKeyPath = "/api/v1/meta/public-key"

// HTTPKeySource fetches GET <baseURL>/api/v1/meta/public-key and unwraps
// the control-plane envelope.
func HTTPKeySource(client *http.Client, baseURL string) KeySource {
	if client == nil {
		client = http.DefaultClient
	}
	url := strings.TrimRight(baseURL, "/") + PublicKeyPath
	return func(ctx context.Context) (PublicKeySet, error) {
		raw, header, err := getKeySet(ctx, client, url)
		if err != nil {
			return PublicKeySet{}, err
		}
		var env struct {
			Data PublicKeySet `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			return PublicKeySet{}, fmt.Errorf("%s: malformed key set: %w", url, err)
		}
		if len(env.Data.Keys) == 0 {
			return PublicKeySet{}, fmt.Errorf("%s: key set has no keys", url)
		}
		// The set must carry a valid signature by one of its own keys: not
		// a trust anchor (pin keys for that), but it rejects a set that was
		// altered in transit or served by something that holds no key.
		sig, err := ParseHeader(header.Get(Header))
		if err != nil {
			return PublicKeySet{}, fmt.Errorf("%s: %w", url, err)
		}
		for _, pk := range env.Data.Keys {
			if pk.KID != sig.KID {
				continue
			}
			pub, err := pk.Decode()
			if err != nil {
				return PublicKeySet{}, fmt.Errorf("%s: %w", url, err)
			}
			if sig.Path != PublicKeyPath || !ed25519.Verify(pub, SignedData(sig.T, raw), sig.Sig) {
				return PublicKeySet{}, fmt.Errorf("%s: key set is not signed by its own key %q", url, sig.KID)
			}
			return env.Data, nil
		}
		return PublicKeySet{}, fmt.Errorf("%s: key set is signed by kid %q, which it does not contain", url, sig.KID)
	}
}

// StaticKeySource serves a fixed set (tests, pinned deployments).
func StaticKeySource(set PublicKeySet) KeySource {
	return func(context.Context) (PublicKeySet, error) { return set, nil }
}

// getKeySet GETs a key set (at most 1 MiB) and answers its body and
// headers; a status other than 200 is an error carrying the body.
func getKeySet(ctx context.Context, client *http.Client, url string) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return raw, resp.Header, nil
}
