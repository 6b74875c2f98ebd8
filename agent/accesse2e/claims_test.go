package accesse2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"deckhand/agent/gateway"
	"deckhand/platform/proxyperm"
)

// claimFrom asks agent a for its container's claim for aud, as a program
// in that container does (loopback, GET /_agent/claim).
func claimFrom(t *testing.T, a *agentProc, aud string) (int, string) {
	t.Helper()
	resp, err := client.Get("http://" + a.gw + gateway.ClaimPath + "?aud=" + aud)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var c struct {
		Value  string `json:"value"`
		Header string `json:"header"`
	}
	_ = json.Unmarshal(raw, &c)
	if resp.StatusCode == 200 && c.Header != proxyperm.ClaimHeader {
		t.Fatalf("claim answer %s", raw)
	}
	return resp.StatusCode, c.Value
}

// TestContainerToContainerClaims: a program in container c1 gets c1's
// claim for c2 from its agent and calls c2's gateway with it, where a
// service-identity group admits c1; claims for another audience, of
// another container, tampered or under an unknown kid are refused.
func TestContainerToContainerClaims(t *testing.T) {
	ctl := newControl(t, "c1", "c2", "c3")
	s, alice, pid, tok := ctl.s, ctl.alice, ctl.pid, ctl.agentToken

	a1 := startAgent(t, t.TempDir(), "--control-url", s.URL, "--container-id", "c1", "--project-id", pid, "--token", tok("c1"))
	a2 := startAgent(t, t.TempDir(), "--control-url", s.URL, "--container-id", "c2", "--project-id", pid, "--token", tok("c2"))
	a3 := startAgent(t, t.TempDir(), "--control-url", s.URL, "--container-id", "c3", "--project-id", pid, "--token", tok("c3"))
	// The document comes after the agents serve (it governs loopback
	// too, which startAgent probes).
	s.Must(s.Call("PUT", "/api/v1/containers/c2/proxy/permissions", map[string]any{"project": pid, "container": "c2",
		"groups":      map[string]any{"peers": map[string]any{"type": "service-identity", "containers": []string{"c1"}}},
		"permissions": map[string]any{"peers": map[string]any{"services": true}}}, alice, "If-Match", "file:v0"), 200)
	const health = "/_/notes/health"
	const outside = "203.0.113.20"
	a2.within(t, 10*time.Second, 401, health, outside)

	st, claim := claimFrom(t, a1, "c2")
	if st != 200 || strings.Count(claim, ".") != 2 {
		t.Fatalf("claim: %d %q", st, claim)
	}
	if st, code := a2.get(health, outside, proxyperm.ClaimHeader, claim); st != 200 {
		t.Fatalf("c1's claim at c2: %d %s\n%s", st, code, a2.out)
	}
	// The agent keeps the claim while it lasts.
	if _, again := claimFrom(t, a1, "c2"); again != claim {
		t.Fatal("a second ask minted a new claim")
	}

	_, forC3 := claimFrom(t, a1, "c3")
	_, ofC3 := claimFrom(t, a3, "c2")
	parts := strings.Split(claim, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[5] == 'A' {
			b[5] = 'B'
		} else {
			b[5] = 'A'
		}
		return string(b)
	}
	flipHex := func(s string) string {
		b := []byte(s)
		if b[5] == '0' {
			b[5] = '1'
		} else {
			b[5] = '0'
		}
		return string(b)
	}
	for _, c := range []struct {
		name, claim string
	}{
		{"wrong audience", forC3},
		{"other container", ofC3},
		{"tampered payload", flip(parts[0]) + "." + parts[1] + "." + parts[2]},
		{"tampered signature", parts[0] + "." + flipHex(parts[1]) + "." + parts[2]},
		{"unknown kid", parts[0] + "." + parts[1] + ".ed25519-0000000000000000"},
		{"no claim", ""},
	} {
		if st, code := a2.get(health, outside, proxyperm.ClaimHeader, c.claim); st != 401 || code != "UNAUTHORIZED" {
			t.Errorf("%s: %d %s, want 401", c.name, st, code)
		}
	}
	// The claim route is the container's own: loopback only, aud required.
	if st, _ := claimFrom(t, a1, ""); st != 400 {
		t.Fatalf("no aud: %d", st)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+a1.gw+gateway.ClaimPath+"?aud=c2", nil)
	req.Header.Set("X-Forwarded-For", outside)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("the claim route answered an outside client")
		}
	}
}
