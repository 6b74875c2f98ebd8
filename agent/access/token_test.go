package access_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/agent/access"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/signing"
)

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := access.ReadTokenFile(write("ok", "agt_abc\n", 0o400)); err != nil || tok != "agt_abc" {
		t.Fatalf("0400 file: %q %v", tok, err)
	}
	for name, tc := range map[string]struct {
		body string
		mode os.FileMode
		want string
	}{
		"open":  {"agt_abc", 0o644, "open to other users"},
		"empty": {"\n", 0o600, "one token on one line"},
		"two":   {"agt_a\nagt_b\n", 0o600, "one token on one line"},
	} {
		if _, err := access.ReadTokenFile(write(name, tc.body, tc.mode)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, err := access.ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was read")
	}
}

// TestTokenFileReadAgainOn401: the control plane stops taking the token
// the agent started with (a warm-pool container claimed); the agent reads
// its token file again, retries with the new token and gets the
// document, and sends the old one no more.
func TestTokenFileReadAgainOn401(t *testing.T) {
	t.Parallel()
	clock := clockpkg.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	var valid atomic.Value
	valid.Store("agt_pool")
	var seen sync.Map // token → times sent
	srv := tokenControl(t, clock, &valid, &seen)
	file := filepath.Join(t.TempDir(), "agent-token")
	if err := os.WriteFile(file, []byte("agt_pool\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	a, err := access.New(access.Config{ControlURL: srv.URL, ContainerID: "c1", Token: "agt_pool", TokenFile: file, Journal: &journal{}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.SyncOnce(ctx); err != nil || a.ETag() != "container:file:v1" {
		t.Fatalf("with the first token: %v %q", err, a.ETag())
	}
	// The claim: a new token in the file, the old one refused.
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("agt_claimed\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	valid.Store("agt_claimed")
	before := func() int64 { n, _ := seen.Load("agt_pool"); return n.(*atomic.Int64).Load() }
	pool := before()
	for range 3 {
		if err := a.SyncOnce(ctx); err != nil {
			t.Fatalf("after the token changed: %v", err)
		}
	}
	if got := before(); got != pool+1 {
		t.Fatalf("the refused token was sent %d more times, want once", got-pool)
	}
	// A file that still holds a refused token changes nothing.
	valid.Store("agt_other")
	if err := a.SyncOnce(ctx); err == nil {
		t.Fatal("a refused token with no new one in the file: no error")
	}
}

// tokenControl is a control plane that answers container c1's document,
// signed, to the token valid holds (401 to any other), counting in seen
// the times each token was sent.
func tokenControl(t *testing.T, clock clockpkg.Clock, valid *atomic.Value, seen *sync.Map) *httptest.Server {
	t.Helper()
	ks := newKeySet(t)
	signer := signing.NewSigner(ks, clock)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, body := 200, []byte(`{"statusCode":200,"message":"ok","data":{"project":"p1","container":"c1","groups":{},"permissions":{},"default":"deny","file_version":1}}`)
		switch {
		case r.URL.Path == signing.PublicKeyPath:
			body, _ = json.Marshal(map[string]any{"data": ks.PublicSet()})
		default:
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			n, _ := seen.LoadOrStore(tok, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			if tok != valid.Load().(string) {
				status, body = 401, []byte(`{"statusCode":401,"message":"invalid or revoked agent token"}`)
			}
		}
		w.Header().Set(signing.Header, signer.Sign(r.URL.Path, body))
		w.Header().Set(signing.BindingHeader, signer.SignBinding(signing.Binding{Status: status, Method: r.Method,
			Path: r.URL.EscapedPath(), Nonce: r.Header.Get(signing.NonceHeader), Body: body}))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}
