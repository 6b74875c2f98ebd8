package accesse2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/platform/signing"
)

// First use trusts whatever key set comes first: behind a forging middle
// from the start, the agent takes the forger's kid and its default-allow
// document. A restart with the control plane's real key pinned evicts
// that kid at once (from trust and from control-keys.json) with the
// document it verified, refuses the forger's sets (no pin signed them)
// while the middle keeps forging, and follows the real control plane
// once it is reached.
func TestPinnedRestartEvictsFirstUseKey(t *testing.T) {
	c := newControl(t, "c1")
	s, alice, pid := c.s, c.alice, c.pid
	agt := c.agentToken("c1")
	s.Must(s.Call("PUT", "/api/v1/containers/c1/proxy/permissions", map[string]any{"project": pid, "container": "c1",
		"groups":      map[string]any{"bots": map[string]any{"type": "token", "header": "X-Key", "value": "k-one"}},
		"permissions": map[string]any{"bots": map[string]any{"services": true}}}, alice, "If-Match", "file:v0"), 200)
	var real struct {
		Data signing.PublicKeySet `json:"data"`
	}
	if err := json.Unmarshal(s.Must(s.Call("GET", signing.PublicKeyPath, nil, ""), 200).Raw, &real); err != nil {
		t.Fatal(err)
	}
	var pin string
	for _, k := range real.Data.Keys {
		if k.KID == real.Data.ActiveKID {
			pin = k.Hex
		}
	}

	f := newForger(t, s.URL, pid)
	f.realSet.Store(&real.Data)
	f.forge.Store(true)
	data := t.TempDir()
	const health, outside = "/_/notes/health", "203.0.113.5"
	keysFile := filepath.Join(data, "proxyperm", "control-keys.json")
	effective := filepath.Join(data, "proxyperm", "effective.json")

	// Unpinned, first use: the forger wins (what pins are for).
	a := startAgent(t, data, "--control-url", f.srv.URL, "--container-id", "c1", "--token", agt)
	a.within(t, 20*time.Second, 200, health, outside)
	if !strings.Contains(readOrEmpty(keysFile), f.kid) {
		t.Fatalf("the first-use set was not kept: %s", readOrEmpty(keysFile))
	}
	a.stop()

	// Pinned restart, the middle still forging.
	a = startAgentProbe(t, data, []string{"X-Key", "k-one"}, "--control-url", f.srv.URL, "--container-id", "c1", "--token", agt,
		"--control-key", pin)
	if kept := readOrEmpty(keysFile); strings.Contains(kept, f.kid) {
		t.Fatalf("the forger's kid is still kept after a pinned start: %s", kept)
	}
	if strings.Contains(readOrEmpty(effective), `"default":"allow"`) {
		t.Fatal("the document the forger's key verified is still kept")
	}
	docs := f.docs.Load()
	deadline := time.Now().Add(60 * time.Second)
	for f.docs.Load() < docs+2 || !strings.Contains(a.out.String(), "key set refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the pinned agent was not served forged answers, or did not refuse the forged set (docs %d)\n%s", f.docs.Load()-docs, a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, code := a.get(health, outside); st == 200 {
		t.Fatalf("pinned restart: the forged default allow is in force (%d %s)\n%s", st, code, a.out)
	}
	if kept := readOrEmpty(keysFile); strings.Contains(kept, f.kid) {
		t.Fatalf("the forger's kid came back: %s", kept)
	}
	if _, err := os.Stat(effective); err == nil && strings.Contains(readOrEmpty(effective), `"default":"allow"`) {
		t.Fatal("a forged document reached the disk under the pin")
	}

	// The middle stops forging: the real document applies under the pin.
	f.forge.Store(false)
	a.within(t, 20*time.Second, 401, health, outside)
	a.within(t, 5*time.Second, 200, health, outside, "X-Key", "k-one")
	for deadline = time.Now().Add(30 * time.Second); !strings.Contains(readOrEmpty(keysFile), real.Data.ActiveKID); {
		if time.Now().After(deadline) {
			t.Fatalf("the real set was never kept under the pin: %s\n%s", readOrEmpty(keysFile), a.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if kept := readOrEmpty(keysFile); strings.Contains(kept, f.kid) {
		t.Fatalf("kept key set under the pin: %s", kept)
	}
}
