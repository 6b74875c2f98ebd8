package accesse2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/platform"
	"deckhand/platform/signing"
)

// forger is a man in the middle between the agent and the control plane:
// passing everything through until forge is set, then answering the key
// set with its own key added (under a new kid, signed by that key alone)
// and the effective document with default allow, re-signed with its key.
type forger struct {
	srv          *httptest.Server
	forge        atomic.Bool
	kid          string
	priv         ed25519.PrivateKey
	sets, docs   atomic.Int64 // forged answers served
	docsAfterSet atomic.Int64 // forged documents served after a forged set
	realSet      atomic.Pointer[signing.PublicKeySet]
}

func newForger(t *testing.T, target, project string) *forger {
	u, _ := url.Parse(target)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	f := &forger{kid: signing.KIDFor(pub), priv: priv}
	rp := httputil.NewSingleHostReverseProxy(u)
	// send signs as the control plane does, binding the answer to the
	// request when it asks: the forger holds its key, so it can.
	send := func(w http.ResponseWriter, r *http.Request, status int, data any) {
		body, _ := json.Marshal(platform.Envelope{StatusCode: status, Message: "forged", Data: data})
		t := time.Now().Unix()
		sig := signing.FormatHeader(t, f.kid, r.URL.Path, ed25519.Sign(f.priv, signing.SignedData(t, body)))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(signing.Header, sig)
		w.Header().Add(signing.EndorsementHeader, sig)
		if n := r.Header.Get(signing.NonceHeader); n != "" {
			b := signing.Binding{Status: status, Method: r.Method, Path: r.URL.EscapedPath(), Nonce: n, Body: body}
			w.Header().Set(signing.BindingHeader, signing.FormatBinding(t, f.kid, status, ed25519.Sign(f.priv, signing.BindingData(t, b))))
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.forge.Load() {
			rp.ServeHTTP(w, r)
			return
		}
		switch {
		case r.URL.Path == signing.PublicKeyPath:
			set := *f.realSet.Load()
			set.Keys = append(append([]signing.PublicKey(nil), set.Keys...), signing.PublicKeyOf(f.kid, priv.Public().(ed25519.PublicKey)))
			set.ActiveKID = f.kid
			f.sets.Add(1)
			send(w, r, 200, set)
		case strings.HasSuffix(r.URL.Path, "/effective"):
			if f.sets.Load() > 0 {
				f.docsAfterSet.Add(1)
			}
			f.docs.Add(1)
			send(w, r, 200, map[string]any{"project": project, "container": "c1", "groups": map[string]any{},
				"permissions": map[string]any{}, "default": "allow", "enable_proxy": true, "file_version": 99, "etag": "file:v99"})
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func readOrEmpty(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// A forged key set through a tampering proxy changes nothing: the
// forger's kid is never trusted, its default-allow document never applies
// and nothing it sent reaches the disk. A legitimate rotation (keys rotate
// beside the control plane, then SIGHUP) is still followed, because the
// old key signs the set announcing the new one.
func TestForgedKeySetRefusedRotationFollowed(t *testing.T) {
	c := newControl(t, "c1")
	s, alice, pid := c.s, c.alice, c.pid
	agt := c.agentToken("c1")
	doc := "/api/v1/containers/c1/proxy/permissions"
	cur := controltest.Data(s.Must(s.Call("PUT", doc, map[string]any{"project": pid, "container": "c1",
		"groups":      map[string]any{"bots": map[string]any{"type": "token", "header": "X-Key", "value": "k-one"}},
		"permissions": map[string]any{"bots": map[string]any{"services": true}}}, alice, "If-Match", "file:v0"), 200))["etag"].(string)
	var real struct {
		Data signing.PublicKeySet `json:"data"`
	}
	if err := json.Unmarshal(s.Must(s.Call("GET", signing.PublicKeyPath, nil, ""), 200).Raw, &real); err != nil {
		t.Fatal(err)
	}

	f := newForger(t, s.URL, pid)
	f.realSet.Store(&real.Data)
	data := t.TempDir()
	key := []string{"X-Key", "k-one"}
	a := startAgentProbe(t, data, key, "--control-url", f.srv.URL, "--container-id", "c1", "--token", agt)
	const health, outside = "/_/notes/health", "203.0.113.5"
	a.within(t, 10*time.Second, 200, health, outside, "X-Key", "k-one")
	effective := filepath.Join(data, "proxyperm", "effective.json")
	keysFile := filepath.Join(data, "proxyperm", "control-keys.json")
	beforeDoc, beforeKeys := readOrEmpty(effective), readOrEmpty(keysFile)
	if !strings.Contains(beforeDoc, "k-one") || !strings.Contains(beforeKeys, real.Data.ActiveKID) {
		t.Fatalf("agent state before the attack:\n%s\n%s", beforeDoc, beforeKeys)
	}

	// The attack: wait until the agent fetched the forged set and then
	// asked for the document again (so it judged the set), twice over.
	f.forge.Store(true)
	deadline := time.Now().Add(60 * time.Second)
	for f.docsAfterSet.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never fetched the forged key set (sets %d, docs %d)\n%s", f.sets.Load(), f.docs.Load(), a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, code := a.get(health, outside); st != 401 {
		t.Fatalf("after the forged default-allow document an outside client without credentials gets %d %s, want 401", st, code)
	}
	if st, _ := a.get(health, outside, "X-Key", "k-one"); st != 200 {
		t.Fatalf("the verified document is no longer in force: %d", st)
	}
	if readOrEmpty(effective) != beforeDoc || readOrEmpty(keysFile) != beforeKeys {
		t.Fatal("something the forger sent reached the disk")
	}
	if strings.Contains(readOrEmpty(keysFile), f.kid) || !strings.Contains(a.out.String(), "key set refused") {
		t.Fatalf("the forged key set was not refused:\n%s", a.out)
	}

	// A restart on the same data keeps trusting only the real keys.
	a.stop()
	a = startAgentProbe(t, data, key, "--control-url", f.srv.URL, "--container-id", "c1", "--token", agt)
	if st, _ := a.get(health, outside); st != 401 {
		t.Fatalf("restarted during the attack: an outside client gets %d, want 401", st)
	}

	// A legitimate rotation beside the running control plane.
	f.forge.Store(false)
	out, err := controltest.Out("keys", "rotate", "--data", s.Data)
	newKid := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(newKid, "ed25519-") {
		t.Fatalf("keys rotate: %v %s", err, out)
	}
	s.Reload()
	for {
		r := s.Call("GET", signing.PublicKeyPath, nil, "")
		if sig, _ := signing.ParseHeader(r.Header.Get(signing.Header)); sig.KID == newKid {
			break
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatal("the control plane did not load the rotated key")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Must(s.Call("PUT", doc+"/permissions/bots", map[string]any{"program": "services", "access": false}, alice, "If-Match", cur), 200)
	a.within(t, 30*time.Second, 403, health, outside, "X-Key", "k-one")
	if kept := readOrEmpty(keysFile); !strings.Contains(kept, newKid) || strings.Contains(kept, f.kid) {
		t.Fatalf("kept key set after the rotation: %s", kept)
	}
}

// The transport and pinning flags: plain http to a host off loopback is
// refused at start unless --insecure-control-url; a pinned key that the
// control plane's set does not carry (or sign) means no set is trusted
// and no document applies; the right pin syncs.
func TestControlURLAndPinnedKey(t *testing.T) {
	if controltest.OnPostgres() {
		t.Skip("the agent's side does not depend on the control plane's store; run once, on the embedded store")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--control-url", "http://203.0.113.9:9", "--container-id", "c1", "--token", "agt_X"}, "--insecure-control-url"},
		{[]string{"--control-url", "http://127.0.0.1:9", "--container-id", "c1", "--token", "agt_X", "--control-key", "abcd"}, "--control-key"},
	} {
		cmd := exec.Command(agentBin, append([]string{"run", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--services", "cron"}, c.args...)...)
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), c.want) {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
	}
	a := startAgent(t, t.TempDir(), "--control-url", "http://203.0.113.9:9", "--insecure-control-url", "--container-id", "c1", "--token", "agt_X")
	a.stop()

	s := controltest.Start(t)
	admin := s.Admin()
	_, alice := s.User(admin, "alice@example.com")
	pid := controltest.Data(s.Must(s.Call("POST", "/api/v1/projects", map[string]any{"name": "P"}, alice), 201))["id"].(string)
	s.Must(s.Call("POST", "/api/v1/admin/containers", map[string]any{"project_id": pid, "name": "one", "id": "c1"}, admin), 201)
	agt := controltest.Data(s.Must(s.Call("POST", "/api/v1/containers/c1/agent-tokens", nil, alice), 201))["token"].(string)
	s.Must(s.Call("PUT", "/api/v1/containers/c1/proxy/permissions", map[string]any{"project": pid, "container": "c1",
		"groups": map[string]any{}, "permissions": map[string]any{}, "default": "allow"}, alice, "If-Match", "file:v0"), 200)
	keySet := s.Must(s.Call("GET", signing.PublicKeyPath, nil, ""), 200)
	var real struct {
		Data signing.PublicKeySet `json:"data"`
	}
	_ = json.Unmarshal(keySet.Raw, &real)
	const health, outside = "/_/notes/health", "203.0.113.5"

	// A wrong pin: the agent trusts no set, applies nothing, writes nothing.
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	data := t.TempDir()
	a = startAgent(t, data, "--control-url", s.URL, "--container-id", "c1", "--token", agt, "--control-key", signing.PublicKeyOf("x", other).Hex)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(a.out.String(), "key set refused") {
		if time.Now().After(deadline) {
			t.Fatalf("agent with a wrong pin never reported the refusal:\n%s", a.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _ := a.get(health, outside); st != 403 {
		t.Fatalf("wrong pin: outside client %d, want 403 (no document)", st)
	}
	for _, name := range []string{"effective.json", "control-keys.json"} {
		if _, err := os.Stat(filepath.Join(data, "proxyperm", name)); err == nil {
			t.Fatalf("wrong pin: %s written", name)
		}
	}
	a.stop()

	// The right pin, as hex and as the key-set file.
	active := real.Data.Keys[len(real.Data.Keys)-1].Hex
	setFile := filepath.Join(t.TempDir(), "control.json")
	if err := os.WriteFile(setFile, keySet.Raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, pin := range []string{active, setFile} {
		a = startAgent(t, t.TempDir(), "--control-url", s.URL, "--container-id", "c1", "--token", agt, "--control-key", pin)
		a.within(t, 10*time.Second, 200, health, outside)
		a.stop()
	}
}
