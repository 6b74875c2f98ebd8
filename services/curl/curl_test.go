package curl_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/curl"
)

type fixture struct {
	h   *platform.Host
	svc *curl.Service
	log *platformtest.SyncBuffer
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "curl")
	log := &platformtest.SyncBuffer{}
	deps.Logger = slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := curl.New(deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{h: platformtest.ServiceHost(t, svc), svc: svc, log: log}
}

func (f fixture) do(t *testing.T, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	return platformtest.Call(t, f.h, method, path, body)
}

// cookieServer sets cookies on /set and echoes the Cookie header on /echo.
func cookieServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/set":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cr3t-session-value", Path: "/", HttpOnly: true})
			http.SetCookie(w, &http.Cookie{Name: "theme", Value: "dark", Path: "/", MaxAge: 3600})
		case "/echo":
			_, _ = io.WriteString(w, r.Header.Get("Cookie"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func curlCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-sS", "--fail"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	platformtest.CheckRoutesDocumented(t, f.h)
	platformtest.CheckQueryValidation(t, f.h)
}

// TestCurlWritesAJarTheServiceLists: the real curl stores cookies with -c
// into the session's path; the service lists them, masked unless asked.
func TestCurlWritesAJarTheServiceLists(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	url := cookieServer(t)
	jar := filepath.Join(f.svc.Dir(), "login.txt")
	curlCmd(t, "-c", jar, "-o", "/dev/null", url+"/set")

	st, m, raw := f.do(t, "GET", "/api/v1/curl/sessions", "")
	if st != 200 || strings.Contains(raw, "s3cr3t") {
		t.Fatalf("list: %d %s", st, raw)
	}
	ss := m["sessions"].([]any)
	if len(ss) != 1 || ss[0].(map[string]any)["id"] != "login" || ss[0].(map[string]any)["cookies"].(float64) != 2 {
		t.Fatalf("sessions: %s", raw)
	}
	st, m, raw = f.do(t, "GET", "/api/v1/curl/sessions/login", "")
	if st != 200 || m["path"] != jar {
		t.Fatalf("get: %d %s", st, raw)
	}
	_, m, raw = f.do(t, "GET", "/api/v1/curl/sessions/login/cookies", "")
	if strings.Contains(raw, "s3cr3t") || strings.Contains(raw, "dark") {
		t.Fatalf("masked list shows a value: %s", raw)
	}
	byName := map[string]map[string]any{}
	for _, c := range m["cookies"].([]any) {
		c := c.(map[string]any)
		byName[c["name"].(string)] = c
	}
	if sid := byName["sid"]; sid == nil || sid["http_only"] != true || sid["value"] != "********" || sid["masked"] != true ||
		sid["domain"] != "127.0.0.1" || sid["path"] != "/" || sid["expires"] != nil || sid["secure"] != false {
		t.Fatalf("sid: %v", byName["sid"])
	}
	if th := byName["theme"]; th == nil || th["http_only"] != false || th["expires"] == nil {
		t.Fatalf("theme: %v", byName["theme"])
	}
	_, m, raw = f.do(t, "GET", "/api/v1/curl/sessions/login/cookies?reveal=true", "")
	if !strings.Contains(raw, `"value":"s3cr3t-session-value"`) {
		t.Fatalf("revealed: %s", raw)
	}
	if st, _, _ = f.do(t, "DELETE", "/api/v1/curl/sessions/login", ""); st != 204 {
		t.Fatal(st)
	}
	if _, err := os.Stat(jar); !os.IsNotExist(err) {
		t.Fatalf("jar after delete: %v", err)
	}
	for _, p := range []string{"/api/v1/curl/sessions/login", "/api/v1/curl/sessions/login/cookies"} {
		if st, m, _ := f.do(t, "GET", p, ""); st != 404 || m["code"] != "NOT_FOUND" {
			t.Errorf("%s: %d", p, st)
		}
	}
	if st, _, _ = f.do(t, "DELETE", "/api/v1/curl/sessions/login", ""); st != 404 {
		t.Fatal(st)
	}
	if strings.Contains(f.log.String(), "s3cr3t") {
		t.Fatal("a cookie value reached the log")
	}
}

// TestServiceWritesAJarCurlSends: cookies the service adds are sent by
// curl -b, and curl -c then rewrites the same jar the service still reads.
func TestServiceWritesAJarCurlSends(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	url := cookieServer(t)
	body := `{"cookies":[{"domain":"127.0.0.1","name":"token","value":"abc-secret-123","http_only":true},
		{"domain":"127.0.0.1","path":"/","name":"lang","value":"en","expires":"2099-01-01T00:00:00Z"},
		{"domain":"other.example","name":"x","value":"no"}]}`
	st, m, raw := f.do(t, "POST", "/api/v1/curl/sessions/api/cookies", body)
	if st != 201 || m["cookies"].(float64) != 3 || strings.Contains(raw, "abc-secret") {
		t.Fatalf("add: %d %s", st, raw)
	}
	jar := m["path"].(string)
	if fi, err := os.Stat(jar); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("jar mode: %v %v", fi, err)
	}
	got := curlCmd(t, "-b", jar, url+"/echo")
	if !strings.Contains(got, "token=abc-secret-123") || !strings.Contains(got, "lang=en") || strings.Contains(got, "x=no") {
		t.Fatalf("curl sent %q", got)
	}
	// Replace one value; 200 for an existing session.
	if st, _, raw = f.do(t, "POST", "/api/v1/curl/sessions/api/cookies", `{"cookies":[{"domain":"127.0.0.1","name":"lang","value":"fr"}]}`); st != 200 {
		t.Fatalf("replace: %d %s", st, raw)
	}
	if got = curlCmd(t, "-b", jar, url+"/echo"); !strings.Contains(got, "lang=fr") || strings.Contains(got, "lang=en") {
		t.Fatalf("after replace curl sent %q", got)
	}
	// curl rewrites the jar with what the server set; the service reads it.
	curlCmd(t, "-b", jar, "-c", jar, "-o", "/dev/null", url+"/set")
	_, m, raw = f.do(t, "GET", "/api/v1/curl/sessions/api/cookies?reveal=1", "")
	if !strings.Contains(raw, `"value":"s3cr3t-session-value"`) || !strings.Contains(raw, `"value":"abc-secret-123"`) {
		t.Fatalf("after curl -c: %s", raw)
	}
	if strings.Contains(f.log.String(), "abc-secret") {
		t.Fatal("a cookie value reached the log")
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct{ path, body, field string }{
		{"/api/v1/curl/sessions/a/cookies", `{}`, "cookies"},
		{"/api/v1/curl/sessions/a/cookies", `{"cookies":[{"name":"n"}]}`, "cookies[0].domain"},
		{"/api/v1/curl/sessions/a/cookies", `{"cookies":[{"domain":"h","name":"a=b"}]}`, "cookies[0].name"},
		{"/api/v1/curl/sessions/a/cookies", `{"cookies":[{"domain":"h","name":"n","value":"a\tb"}]}`, "cookies[0].value"},
		{"/api/v1/curl/sessions/a/cookies", `{"cookies":[{"domain":"h","name":"n","path":"x"}]}`, "cookies[0].path"},
		{"/api/v1/curl/sessions/a/cookies", `{"cookies":[{"domain":"h","name":"n","expires":"soon"}]}`, "cookies[0].expires"},
		{"/api/v1/curl/sessions/..evil/cookies", `{"cookies":[{"domain":"h","name":"n"}]}`, "id"},
	} {
		st, m, raw := f.do(t, "POST", c.path, c.body)
		if st != 400 || m["details"] != c.field || !strings.Contains(m["message"].(string), c.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, st, raw, c.field)
		}
	}
	if ents, _ := os.ReadDir(f.svc.Dir()); len(ents) != 0 {
		t.Fatalf("a refused write left files: %v", ents)
	}
	// A file that is not a jar: 409 naming the line, never its content.
	if err := os.WriteFile(filepath.Join(f.svc.Dir(), "broken.txt"), []byte("host\tTRUE\t/\tFALSE\tsoon\tn\tSECRETV\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _, raw := f.do(t, "GET", "/api/v1/curl/sessions/broken/cookies", "")
	if st != 409 || !strings.Contains(raw, "line 1") || bytes.Contains([]byte(raw), []byte("SECRETV")) {
		t.Fatalf("broken jar: %d %s", st, raw)
	}
}
