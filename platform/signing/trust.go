package signing

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A verifier that pins the control plane's keys accepts a new key only
// from a key set that a key it already trusts has signed. The control
// plane therefore signs its key-set answer with every key of the set (one
// EndorsementHeader each, beside the usual X-Service-Signature of the
// active key): after a rotation, the answer announcing the new key
// carries the old key's signature, which a client that knew only the old
// key verifies. A set signed only by keys it introduces (a man in the
// middle's own key) is refused, whatever it says.

// EndorsementHeader carries one signature of the key-set answer per key
// of the set, in the X-Service-Signature format (path
// /api/v1/meta/public-key, signed data "<t>.<body>").
const EndorsementHeader = "X-Key-Set-Signature"

// MaxKeys bounds the keys of an accepted set (and so the signatures the
// control plane makes per key-set answer).
const MaxKeys = 256

// Endorse signs the key-set answer body with every key of the set, at t,
// for path: the values of EndorsementHeader.
func (ks *KeySet) Endorse(t int64, path string, body []byte) []string {
	msg := SignedData(t, body)
	keys := ks.Keys()
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, FormatHeader(t, k.ID, path, ed25519.Sign(k.private, msg)))
	}
	return out
}

// FetchedKeySet is a key-set answer as it arrived: the exact body and
// every signature header on it (X-Service-Signature, then each
// EndorsementHeader).
type FetchedKeySet struct {
	Body       []byte
	Signatures []string
}

// Errors of key-set acceptance; callers match them with errors.Is.
var (
	ErrKeySetMalformed  = errors.New("key set: malformed")
	ErrKeySetUnendorsed = errors.New("key set: not signed by a trusted key")
	ErrKeySetRebinds    = errors.New("key set: names a trusted kid with another key")
)

// parseKeySet reads the envelope {"data": PublicKeySet} and decodes every
// key: kids unique and non-empty, at most MaxKeys, the active kid among
// them.
func parseKeySet(body []byte) (PublicKeySet, map[string]ed25519.PublicKey, error) {
	var env struct {
		Data *PublicKeySet `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Data == nil {
		return PublicKeySet{}, nil, fmt.Errorf("%w: not a key-set envelope", ErrKeySetMalformed)
	}
	set := *env.Data
	if len(set.Keys) == 0 || len(set.Keys) > MaxKeys {
		return set, nil, fmt.Errorf("%w: %d keys (1-%d)", ErrKeySetMalformed, len(set.Keys), MaxKeys)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, pk := range set.Keys {
		if pk.KID == "" || strings.ContainsAny(pk.KID, ", \t") {
			return set, nil, fmt.Errorf("%w: a kid is empty or holds separators", ErrKeySetMalformed)
		}
		if _, dup := keys[pk.KID]; dup {
			return set, nil, fmt.Errorf("%w: kid %q twice", ErrKeySetMalformed, pk.KID)
		}
		raw, err := pk.Decode()
		if err != nil {
			return set, nil, fmt.Errorf("%w: %v", ErrKeySetMalformed, err)
		}
		keys[pk.KID] = raw
	}
	if _, ok := keys[set.ActiveKID]; !ok {
		return set, nil, fmt.Errorf("%w: active_kid %q is not among its keys", ErrKeySetMalformed, set.ActiveKID)
	}
	return set, keys, nil
}

// signedBy reports whether one of sigs is a valid signature of body for
// the key-set path, within tolerance of now, by a key of signers (looked
// up by the signature's kid).
func signedBy(signers map[string]ed25519.PublicKey, f FetchedKeySet, now time.Time, tolerance time.Duration) bool {
	for _, h := range f.Signatures {
		s, err := ParseHeader(h)
		if err != nil || s.Path != PublicKeyPath {
			continue
		}
		pub, ok := signers[s.KID]
		if !ok || len(pub) != ed25519.PublicKeySize {
			continue
		}
		if skew := now.Sub(time.Unix(s.T, 0)); skew > tolerance || skew < -tolerance {
			continue
		}
		if ed25519.Verify(pub, SignedData(s.T, f.Body), s.Sig) {
			return true
		}
	}
	return false
}

// AcceptKeySet decides a fetched key set against the keys already trusted
// (kid → key, at least one): it is accepted only when one of its
// signatures, bound to the key-set path and within tolerance of now,
// verifies under a trusted key (looked up by the signature's kid, the
// trusted half, never the set's). A set that names a trusted kid with
// another key is refused whole. The answer is the set's keys: what to
// trust next.
func AcceptKeySet(trusted map[string]ed25519.PublicKey, f FetchedKeySet, now time.Time, tolerance time.Duration) (map[string]ed25519.PublicKey, error) {
	if len(trusted) == 0 {
		return nil, fmt.Errorf("%w: no key is trusted yet", ErrKeySetUnendorsed)
	}
	_, keys, err := parseKeySet(f.Body)
	if err != nil {
		return nil, err
	}
	for kid, pub := range keys {
		if old, ok := trusted[kid]; ok && !old.Equal(pub) {
			return nil, fmt.Errorf("%w %q", ErrKeySetRebinds, kid)
		}
	}
	if !signedBy(trusted, f, now, tolerance) {
		return nil, ErrKeySetUnendorsed
	}
	return keys, nil
}

// FirstKeySet takes a key set on its own signature: one of its keys must
// sign it. That proves only that whoever served it holds a key of it, so
// a caller uses it for the first set alone, and only over a transport it
// trusts (https, or loopback); every later set goes through AcceptKeySet.
func FirstKeySet(f FetchedKeySet, now time.Time, tolerance time.Duration) (map[string]ed25519.PublicKey, error) {
	_, keys, err := parseKeySet(f.Body)
	if err != nil {
		return nil, err
	}
	if !signedBy(keys, f, now, tolerance) {
		return nil, fmt.Errorf("%w: not signed by a key of its own", ErrKeySetUnendorsed)
	}
	return keys, nil
}

// KeySetOf renders trusted keys as a key set (to keep them on disk).
func KeySetOf(keys map[string]ed25519.PublicKey) PublicKeySet {
	set := PublicKeySet{Usage: Usage, SigningFormat: Format}
	for _, kid := range sortedKIDs(keys) {
		set.Keys = append(set.Keys, PublicKeyOf(kid, keys[kid]))
	}
	if len(set.Keys) > 0 {
		set.ActiveKID = set.Keys[len(set.Keys)-1].KID
	}
	return set
}

// KeysOf decodes a key set's keys (a pinned key-set file, or one kept on
// disk), with the same rules as a fetched one except the active kid.
func KeysOf(set PublicKeySet) (map[string]ed25519.PublicKey, error) {
	if set.ActiveKID == "" && len(set.Keys) > 0 {
		set.ActiveKID = set.Keys[0].KID
	}
	body, err := json.Marshal(map[string]any{"data": set})
	if err != nil {
		return nil, err
	}
	_, keys, err := parseKeySet(body)
	return keys, err
}

func sortedKIDs(keys map[string]ed25519.PublicKey) []string {
	return slices.Sorted(maps.Keys(keys))
}
