package accesse2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
	"deckhand/platform/signing"
)

// tampers waits until the middle served n more tampered answers and the
// agent said it refused one, then checks that nothing changed: an outside
// client without credentials still gets want, the group's key still
// passes, effective.json is as it was.
func tampers(t *testing.T, a *agentProc, m *platformtest.Middle, what, effective, before string, want int) {
	t.Helper()
	const health, outside = "/_/notes/health", "203.0.113.5"
	start, logged := m.Tampered(), strings.Count(a.out.String(), "failed signature verification")
	deadline := time.Now().Add(60 * time.Second)
	for m.Tampered() < start+3 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the agent was not served the tampered answers (%d served)\n%s", what, m.Tampered()-start, a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, code := a.get(health, outside); st != want {
		t.Fatalf("%s: an outside client without credentials gets %d %s, want %d", what, st, code, want)
	}
	if st, code := a.get(health, outside, "X-Key", "k-one"); st != 200 {
		t.Fatalf("%s: the group's key gets %d %s: the document in force changed", what, st, code)
	}
	if readOrEmpty(effective) != before {
		t.Fatalf("%s: effective.json changed:\n%s", what, readOrEmpty(effective))
	}
	if strings.Count(a.out.String(), "failed signature verification") == logged {
		t.Fatalf("%s: the agent did not say it refused the answers:\n%s", what, a.out)
	}
}

// A man in the middle holding only genuine signed answers changes
// nothing: an older signed 200 replayed within the replay window (the
// default allow the document had before), the current document's signed
// 304 passed on as a 404, and a genuine signed 404 of another container
// passed on for this one are all refused; the newer document stays in
// force and nothing is written. Without the middle the agent follows the
// next change.
func TestReplayedAndRelabelledAnswersChangeNothing(t *testing.T) {
	c := newControl(t, "c1", "c2")
	s, alice, pid := c.s, c.alice, c.pid
	agt := c.agentToken("c1")
	doc := "/api/v1/containers/c1/proxy/permissions"
	put := func(def, etag string) string {
		return controltest.Data(s.Must(s.Call("PUT", doc, map[string]any{"project": pid, "container": "c1", "default": def,
			"groups":      map[string]any{"bots": map[string]any{"type": "token", "header": "X-Key", "value": "k-one"}},
			"permissions": map[string]any{"bots": map[string]any{"services": true}}}, alice, "If-Match", etag), 200))["etag"].(string)
	}
	etag := put("allow", "file:v0")

	m := platformtest.NewMiddle(t, s.URL, "/proxy/permissions/effective")
	data := t.TempDir()
	a := startAgentProbe(t, data, []string{"X-Key", "k-one"}, "--control-url", m.URL, "--container-id", "c1", "--token", agt)
	const health, outside = "/_/notes/health", "203.0.113.5"
	a.within(t, 10*time.Second, 200, health, outside)
	older := m.Last(http.StatusOK)
	if older == nil || !strings.Contains(string(older.Body), `"default":"allow"`) {
		t.Fatalf("the middle kept no signed default-allow answer: %+v", older)
	}

	// The document moves to default deny.
	etag = put("deny", etag)
	a.within(t, 10*time.Second, 401, health, outside)
	effective := filepath.Join(data, "proxyperm", "effective.json")
	before := readOrEmpty(effective)
	if !strings.Contains(before, `"default":"deny"`) {
		t.Fatalf("effective.json: %s", before)
	}

	m.Replay(older)
	tampers(t, a, m, "an older signed 200 replayed", effective, before, 401)

	m.Relabel(http.StatusNotModified, http.StatusNotFound)
	tampers(t, a, m, "a signed 304 passed on as 404", effective, before, 401)

	// A genuine signed 404 (c2 has no document), its header naming this
	// container's path: the path is not in "<t>.<body>".
	r := s.Call("GET", "/api/v1/containers/c2/proxy/permissions/effective", nil, c.agentToken("c2"))
	if r.Status != http.StatusNotFound {
		t.Fatalf("c2's effective document: %d", r.Status)
	}
	sig, err := signing.ParseHeader(r.Header.Get(signing.Header))
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header.Clone()
	h.Set(signing.Header, signing.FormatHeader(sig.T, sig.KID, "/api/v1/containers/c1/proxy/permissions/effective", sig.Sig))
	m.Replay(&platformtest.Answer{Status: http.StatusNotFound, Header: h, Body: r.Raw})
	tampers(t, a, m, "another container's signed 404", effective, before, 401)

	// Untouched answers still apply.
	m.Pass()
	put("allow", etag)
	a.within(t, 10*time.Second, 200, health, outside)
}
