package signing

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"net/http"
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
		path = cmp.Or(resp.Request.URL.EscapedPath(), "/")
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

// VerifyBinding checks a binding header against what the client sent and
// received: the status first (so a relabelled answer says so), then the
// replay window, then the signature over BindingData.
func (v *Verifier) VerifyBinding(ctx context.Context, header string, b Binding) error {
	s, err := ParseBinding(header)
	if err != nil {
		return err
	}
	if s.Status != b.Status {
		return fmt.Errorf("%w: signed %d, received %d", ErrStatusMismatch, s.Status, b.Status)
	}
	skew := v.opt.Clock.Now().Sub(time.Unix(s.T, 0))
	if skew > v.opt.Tolerance || skew < -v.opt.Tolerance {
		return fmt.Errorf("%w: binding t=%d is %s from now", ErrReplayWindow, s.T, skew.Round(time.Second))
	}
	pub, err := v.key(ctx, s.KID)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, BindingData(s.T, b), s.Sig) {
		return fmt.Errorf("%w: the binding (status, method, path, ETag, nonce or body) differs from what was signed", ErrBadSignature)
	}
	return nil
}

// VerifyBoundResponse verifies an answer to a request that carried nonce
// (NonceHeader): its X-Service-Signature, its binding, and, for a body
// that is a control-plane envelope, that the envelope's statusCode is the
// HTTP status. body is what the caller read.
func (v *Verifier) VerifyBoundResponse(resp *http.Response, body []byte, nonce string) error {
	if _, err := v.VerifyResponse(resp, body); err != nil {
		return err
	}
	b := Binding{Status: resp.StatusCode, ETag: resp.Header.Get("ETag"), Nonce: nonce, Body: body}
	ctx := context.Background()
	if r := resp.Request; r != nil {
		ctx, b.Method = r.Context(), r.Method
		if r.URL != nil {
			if b.Path = r.URL.EscapedPath(); b.Path == "" {
				b.Path = "/"
			}
		}
	}
	return v.VerifyBinding(ctx, resp.Header.Get(BindingHeader), b)
}
