package signing

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"deckhand/platform"
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
// fetched again (interface.md: cache at least 24 hours).
const DefaultCacheTTL = 24 * time.Hour

// VerifierOptions configures a Verifier.
type VerifierOptions struct {
	// Source fetches keys; HTTPKeySource is the usual one.
	Source KeySource
	Clock  platform.Clock // nil: system clock
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
	fetchedAt time.Time
	fetches   int

	fetchMu sync.Mutex // one fetch at a time; waiters reuse its result
}

// NewVerifier builds a verifier; it fetches keys lazily on first use.
func NewVerifier(opt VerifierOptions) *Verifier {
	if opt.Clock == nil {
		opt.Clock = platform.SystemClock{}
	}
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultCacheTTL
	}
	if opt.Tolerance <= 0 {
		opt.Tolerance = ReplayTolerance * time.Second
	}
	return &Verifier{opt: opt, keys: map[string]ed25519.PublicKey{}}
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
	last := v.fetchedAt
	v.mu.RUnlock()
	if ok && fresh {
		return k, nil
	}
	if !ok && fresh && v.opt.MinRefetch > 0 && now.Sub(last) < v.opt.MinRefetch {
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

// ensure fetches the set when the cache is empty or stale.
func (v *Verifier) ensure(ctx context.Context) error {
	now := v.opt.Clock.Now()
	v.mu.RLock()
	fresh := !v.fetchedAt.IsZero() && now.Sub(v.fetchedAt) < v.opt.CacheTTL
	gen := v.fetches
	v.mu.RUnlock()
	if fresh {
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
	if v.opt.Source == nil {
		return errors.New("signature: verifier has no key source")
	}
	set, err := v.opt.Source(ctx)
	now := v.opt.Clock.Now()
	if err != nil {
		// A failed fetch still counts against MinRefetch.
		v.mu.Lock()
		v.fetches++
		v.mu.Unlock()
		return fmt.Errorf("signature: fetch public keys: %w", err)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, pk := range set.Keys {
		raw, err := pk.Decode()
		if err != nil {
			return fmt.Errorf("signature: fetched key set: %w", err)
		}
		keys[pk.KID] = raw
	}
	v.mu.Lock()
	v.keys, v.fetchedAt = keys, now
	v.fetches++
	v.mu.Unlock()
	return nil
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
// read into body.
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
	return v.Verify(ctx, resp.Header.Get(Header), path, body)
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return PublicKeySet{}, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return PublicKeySet{}, err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return PublicKeySet{}, err
		}
		if resp.StatusCode != http.StatusOK {
			return PublicKeySet{}, fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, strings.TrimSpace(string(raw)))
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
		sig, err := ParseHeader(resp.Header.Get(Header))
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
