package access

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"deckhand/platform/atomicfile"
	"deckhand/platform/contract"
	"deckhand/platform/signing"
)

// The agent trusts the control plane's signing keys as follows:
//   - anchors: the keys of --control-key (pinned: kept whatever a set
//     says) or, without pins, the set it accepted last
//     (<data>/proxyperm/control-keys.json); with pins, a set is accepted
//     only when a pinned key signed it, and kept keys that are not pinned
//     are dropped at start (keptKeys);
//   - with no anchor, the first key set is taken on its own signature, and
//     only from an https control URL or one on loopback (a plain http URL
//     elsewhere needs --insecure-control-url, and is refused at start
//     without it);
//   - a set announcing a new kid is accepted only when a key already
//     trusted signed it (the control plane signs its key-set answer with
//     every key: signing.AcceptKeySet); anything else is refused, the keys
//     stay, and the response signed by the unknown kid is not applied;
//   - only accepted sets are written to disk, as only verified documents
//     are (effective.json).

// controlKeysFile keeps the last accepted key set, beside effective.json.
const controlKeysFile = "control-keys.json"

// checkControlURL parses --control-url: http or https, a host, no query
// or fragment; plain http only to loopback unless insecure.
func checkControlURL(raw string, insecure bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("--control-url %q: must be an http:// or https:// URL with a host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("--control-url %q: must have no credentials, query or fragment", raw)
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) && !insecure {
		return "", fmt.Errorf("--control-url %s: plain http to a control plane that is not on loopback lets anyone on the path "+
			"see the agent token and withhold updates; use https, or pass --insecure-control-url to accept that", u.Redacted())
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// parseControlKey reads --control-key: a 32-byte ED25519 public key in
// hex (its kid derived as the control plane derives it), or a file holding
// such a key, or a key set (the public-key answer, enveloped or not).
func parseControlKey(v string) (map[string]ed25519.PublicKey, error) {
	v = strings.TrimSpace(v)
	if keys, ok := hexKey(v); ok {
		return keys, nil
	}
	f, err := os.Open(v)
	if err != nil {
		return nil, fmt.Errorf("--control-key: neither a 64-digit hex public key nor a readable file: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("--control-key %s: %w", v, err)
	}
	if keys, ok := hexKey(strings.TrimSpace(string(raw))); ok {
		return keys, nil
	}
	var env struct {
		Data *signing.PublicKeySet `json:"data"`
	}
	var set signing.PublicKeySet
	if err := json.Unmarshal(raw, &env); err == nil && env.Data != nil {
		set = *env.Data
	} else if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("--control-key %s: not a hex key or a key set (GET %s)", v, signing.PublicKeyPath)
	}
	keys, err := signing.KeysOf(set)
	if err != nil {
		return nil, fmt.Errorf("--control-key %s: %w", v, err)
	}
	return keys, nil
}

func hexKey(s string) (map[string]ed25519.PublicKey, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, false
	}
	pub := ed25519.PublicKey(b)
	return map[string]ed25519.PublicKey{signing.KIDFor(pub): pub}, true
}

// keptSet is control-keys.json: the set accepted last and the pins in
// force when it was (with pins, every accepted set was signed by one).
type keptSet struct {
	signing.PublicKeySet
	PinnedBy []signing.PublicKey `json:"pinned_by,omitempty"`
}

// savedKeys is the set accepted last, nil when none is kept (or it does
// not read: then the pins, or first use, decide again), and the pins it
// was accepted under.
func (a *Authorizer) savedKeys() (keys, pins map[string]ed25519.PublicKey) {
	if a.cfg.Dir == "" {
		return nil, nil
	}
	path := filepath.Join(a.cfg.Dir, controlKeysFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var set keptSet
	if err == nil {
		err = json.Unmarshal(raw, &set)
	}
	if err == nil {
		keys, err = signing.KeysOf(set.PublicKeySet)
	}
	if err == nil && len(set.PinnedBy) > 0 {
		pins, err = signing.KeysOf(signing.PublicKeySet{Keys: set.PinnedBy})
	}
	if err != nil {
		a.cfg.Logger.Warn("kept control-plane key set unreadable; ignored", "file", path, "err", err)
		return nil, nil
	}
	return keys, pins
}

// keptKeys is what the agent trusts of the kept set at start: all of it
// without pins, or when it was accepted under pins that are all still
// pinned; otherwise only the pinned keys. A kept key that no pin endorsed
// (taken on first use, perhaps from a man in the middle) is dropped from
// trust and from the disk now, with the document it let in
// (effective.json: the gateway goes back to loopback only until a
// verified answer comes); the control plane's other keys come back with
// the next set a pinned key signed.
func (a *Authorizer) keptKeys(pinned map[string]ed25519.PublicKey) map[string]ed25519.PublicKey {
	kept, under := a.savedKeys()
	if len(pinned) == 0 || (len(under) > 0 && len(signing.PinnedOnly(under, pinned)) == len(under)) {
		return kept
	}
	trusted := signing.PinnedOnly(kept, pinned)
	if len(trusted) == len(kept) {
		return trusted
	}
	dropped := slices.DeleteFunc(slices.Sorted(maps.Keys(kept)), func(kid string) bool {
		_, ok := trusted[kid]
		return ok
	})
	a.cfg.Journal.Record(contract.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "warn",
		Message: "control plane signing keys that no --control-key endorsed dropped, with the document they verified",
		Fields:  map[string]any{"kids": dropped}})
	for _, name := range []string{controlKeysFile, "effective.json"} {
		if err := os.Remove(filepath.Join(a.cfg.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			a.cfg.Logger.Warn("drop state verified under unendorsed keys", "file", name, "err", err)
		}
	}
	return trusted
}

// keysAccepted keeps an accepted set on disk (0600, atomic), with the
// pins it was accepted under, and journals a change of the trusted kids.
func (a *Authorizer) keysAccepted(keys map[string]ed25519.PublicKey) {
	kids := slices.Sorted(maps.Keys(keys))
	if a.lastKIDs.Load() != nil && slices.Equal(*a.lastKIDs.Load(), kids) {
		return
	}
	a.lastKIDs.Store(&kids)
	a.cfg.Journal.Record(contract.JournalEntry{Time: a.cfg.Clock.Now(), Source: "gateway", Level: "info",
		Message: "control plane signing keys trusted", Fields: map[string]any{"kids": kids}})
	if a.cfg.Dir == "" {
		return
	}
	set := keptSet{PublicKeySet: signing.KeySetOf(keys)}
	if len(a.pinned) > 0 {
		set.PinnedBy = signing.KeySetOf(a.pinned).Keys
	}
	raw, err := json.Marshal(set)
	if err == nil {
		err = writeAtomic(a.cfg.Dir, controlKeysFile, raw)
	}
	if err != nil {
		a.cfg.Logger.Warn("keep the control plane's key set on disk", "err", err)
	}
}

// writeAtomic writes dir/name (0600) through a synced temporary file.
func writeAtomic(dir, name string, raw []byte) error {
	return atomicfile.WriteWith(filepath.Join(dir, name), 0o600, atomicfile.Options{UID: -1, MkdirMode: 0o700},
		func(w io.Writer) error { _, err := w.Write(raw); return err })
}
