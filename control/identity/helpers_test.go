package identity_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"deckhand/control/identity"
	"deckhand/control/identity/identitytest"
	"deckhand/control/mail"
	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/platformtest"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

type env struct {
	t       testing.TB
	svc     *identity.Service
	host    *platform.Host
	url     string
	mailDir string
	clock   *clockpkg.FakeClock
	db      *store.DB
	sealer  *secrets.Sealer
	client  *http.Client
	// another opens a second handle on the same PostgreSQL database (nil
	// on bbolt, whose file one handle owns).
	another func() *store.DB
}

// engine is the store engine this run of the package's tests uses:
// TestMain runs every test once on bbolt and once on PostgreSQL.
var engine storetest.Engine

func TestMain(m *testing.M) {
	code := 0
	for _, e := range storetest.Engines() {
		engine = e
		if c := m.Run(); c != 0 {
			code = c
		}
	}
	platformtest.StopPostgres()
	os.Exit(code)
}

// newEnv starts identity on a fresh store of the run's engine behind a
// real loopback listener, with mail written into a temp directory.
func newEnv(t testing.TB, mods ...func(*identity.Deps)) *env {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("store engine: %s", engine.Name)
		}
	})
	dir := t.TempDir()
	mailDir := filepath.Join(dir, "mail")
	m, err := mail.New(mail.Config{Dir: mailDir})
	if err != nil {
		t.Fatal(err)
	}
	clock := clockpkg.NewFakeClock(time.Now().UTC())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	sealer, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	deps := identity.Deps{Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Mailer: m,
		Signups: true, PublicURL: base, Sealer: sealer}
	for _, mod := range mods {
		mod(&deps)
	}
	db := deps.DB
	var another func() *store.DB
	if db == nil { // else a test brought its own store
		db, another = engine.Open(t)
		deps.DB = db
		if engine.Name == "bbolt" {
			another = nil
		}
	}
	svc, err := identity.New(deps)
	if err != nil {
		t.Fatal(err)
	}
	host := platform.NewHost(platform.HostConfig{Style: platform.EnvelopeErrors, Logger: deps.Logger, Auth: svc, Limiter: svc.Limiter(),
		Info: platform.Info{Name: "control", Title: "identity test"}}, svc.Routes())
	go host.Serve(ln)
	e := &env{t: t, svc: svc, host: host, url: base, mailDir: mailDir, clock: clock, db: db, sealer: deps.Sealer,
		another: another, client: &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = host.Shutdown(ctx)
		_ = svc.Close()
		_ = db.Close()
		e.client.CloseIdleConnections()
	})
	return e
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r resp) data() map[string]any {
	d, _ := r.body["data"].(map[string]any)
	return d
}

func (r resp) str(path ...string) string {
	var cur any = r.body
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}

// call sends body (JSON-encoded unless []byte or string) with an optional
// bearer credential.
func (e *env) call(method, path string, body any, bearer string, hdrs ...string) resp {
	e.t.Helper()
	return e.callWith(e.client, method, path, body, bearer, hdrs...)
}

func (e *env) callWith(c *http.Client, method, path string, body any, bearer string, hdrs ...string) resp {
	e.t.Helper()
	r := identitytest.Call(e.t, c, e.url, method, path, body, bearer, hdrs...)
	return resp{status: r.Status, header: r.Header, body: r.Body, raw: r.Raw}
}

// must fails unless the response has the wanted status.
func (e *env) must(r resp, status int) resp {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

var tokenInMail = regexp.MustCompile(`token=([A-Za-z0-9_\-]+)`)

// mails returns the .eml files sent to addr, oldest first.
func (e *env) mails(addr string) []string {
	e.t.Helper()
	entries, _ := os.ReadDir(e.mailDir)
	var names []string
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".eml") {
			names = append(names, en.Name())
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(e.mailDir, n))
		if err != nil {
			e.t.Fatal(err)
		}
		if strings.Contains(string(raw), "\r\nTo: "+addr+"\r\n") {
			out = append(out, string(raw))
		}
	}
	return out
}

// mailToken is the token= of the latest mail to addr.
func (e *env) mailToken(addr string) string {
	e.t.Helper()
	ms := e.mails(addr)
	if len(ms) == 0 {
		e.t.Fatalf("no mail to %s", addr)
	}
	m := tokenInMail.FindStringSubmatch(ms[len(ms)-1])
	if m == nil {
		e.t.Fatalf("no token in mail:\n%s", ms[len(ms)-1])
	}
	return m[1]
}

const goodPassword = "Correct-Horse-9battery"

// account signs up, verifies and logs in; it returns the login data.
func (e *env) account(email string) map[string]any {
	e.t.Helper()
	e.must(e.call("POST", "/api/v1/auth/signup", map[string]any{"email": email, "password": goodPassword}, ""), 200)
	e.must(e.call("POST", "/api/v1/auth/verify-email", map[string]any{"token": e.mailToken(email)}, ""), 200)
	return e.login(email, goodPassword)
}

func (e *env) login(email, pw string) map[string]any {
	e.t.Helper()
	return e.must(e.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""), 200).data()
}

// events lists event types recorded for resourceID.
func (e *env) events(resourceID string) []string {
	e.t.Helper()
	var out []string
	err := e.db.View(func(tx *store.Tx) error {
		return tx.ForEach("events", func(_ string, raw []byte) error {
			var ev struct {
				EventType  string `json:"event_type"`
				ResourceID string `json:"resource_id"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				return err
			}
			if ev.ResourceID == resourceID {
				out = append(out, ev.EventType)
			}
			return nil
		})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}
