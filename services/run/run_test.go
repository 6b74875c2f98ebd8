package run_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
	"deckhand/services/run"
)

func newHost(t *testing.T) (*platform.Host, string) {
	t.Helper()
	h, ws, _ := newHostDeps(t)
	return h, ws
}

func newHostDeps(t *testing.T, allow ...string) (*platform.Host, string, contract.ServiceDeps) {
	t.Helper()
	return newHostSettings(t, &run.Settings{AllowHosts: allow})
}

// newHostSettings is the service with set and a fresh workspace.
func newHostSettings(t *testing.T, set *run.Settings) (*platform.Host, string, contract.ServiceDeps) {
	t.Helper()
	deps := platformtest.ServiceDeps(t, "run")
	ws := t.TempDir()
	set.Workspace = ws
	svc, err := run.New(deps, set)
	if err != nil {
		t.Fatal(err)
	}
	return platformtest.ServiceHost(t, svc), ws, deps
}

func do(t *testing.T, h *platform.Host, method, path, body string, hdr ...string) (int, map[string]any, string) {
	t.Helper()
	return platformtest.Call(t, h, method, path, body, hdr...)
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t)
	platformtest.CheckRoutesDocumented(t, h)
	platformtest.CheckQueryValidation(t, h)
}

func TestProfiles(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t)
	st, m, raw := do(t, h, "POST", "/api/v1/run/profiles", `{"name":"dev","shell":"/bin/bash","env":{"A":"1"},"cwd":"/tmp","path":["/opt/bin"]}`)
	if st != 201 || m["active"] != true || m["version"].(float64) != 1 {
		t.Fatalf("create: %d %s", st, raw)
	}
	if st, _, raw = do(t, h, "POST", "/api/v1/run/profiles", `{"name":"dev"}`); st != 409 {
		t.Fatalf("duplicate: %d %s", st, raw)
	}
	if st, _, _ = do(t, h, "POST", "/api/v1/run/profiles", `{"name":"ci"}`); st != 201 {
		t.Fatal(st)
	}
	st, m, raw = do(t, h, "PATCH", "/api/v1/run/profiles/dev", `{"env":{"A":null,"B":"2"},"cwd":"/"}`, "If-Match", "1")
	env, _ := m["env"].(map[string]any)
	if st != 200 || m["version"].(float64) != 2 || env["B"] != "2" || env["A"] != nil || m["cwd"] != "/" {
		t.Fatalf("patch: %d %s", st, raw)
	}
	if st, m, _ = do(t, h, "PATCH", "/api/v1/run/profiles/dev", `{"cwd":"/tmp"}`, "If-Match", "1"); st != 409 || m["code"] != "CONFLICT" {
		t.Fatalf("stale patch: %d %v", st, m)
	}
	if st, _, raw = do(t, h, "POST", "/api/v1/run/profiles/ci/select", ""); st != 200 {
		t.Fatalf("select: %d %s", st, raw)
	}
	_, m, raw = do(t, h, "GET", "/api/v1/run/profiles", "")
	if m["active"] != "ci" || len(m["profiles"].([]any)) != 2 {
		t.Fatalf("list: %s", raw)
	}
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/api/v1/run/profiles", `{"name":""}`, "name"},
		{"POST", "/api/v1/run/profiles", `{"name":"x","shell":"bash"}`, "shell"},
		{"POST", "/api/v1/run/profiles", `{"name":"x","env":{"1A":"v"}}`, "env"},
		{"POST", "/api/v1/run/profiles", `{"name":"x","cwd":"rel"}`, "cwd"},
		{"POST", "/api/v1/run/profiles", `{"name":"x","path":["/ok","rel"]}`, "path[1]"},
		{"POST", "/api/v1/run/profiles", `{"name":"x","bogus":1}`, "bogus"},
		{"PATCH", "/api/v1/run/profiles/ci", `{"cwd":"x"}`, "cwd"},
	} {
		st, m, raw := do(t, h, c.method, c.path, c.body)
		if st != 400 || m["details"] != c.field || !strings.Contains(m["message"].(string), c.field) {
			t.Errorf("%s %s: %d %s, want 400 naming %s", c.method, c.body, st, raw, c.field)
		}
	}
	if st, _, _ = do(t, h, "PATCH", "/api/v1/run/profiles/dev", `{}`, "If-Match", "abc"); st != 400 {
		t.Fatalf("bad If-Match: %d", st)
	}
	for _, c := range []struct{ method, path string }{{"PATCH", "/api/v1/run/profiles/none"}, {"DELETE", "/api/v1/run/profiles/none"},
		{"POST", "/api/v1/run/profiles/none/select"}} {
		if st, _, _ := do(t, h, c.method, c.path, "{}"); st != 404 {
			t.Errorf("%s %s: %d, want 404", c.method, c.path, st)
		}
	}
	if st, _, _ = do(t, h, "DELETE", "/api/v1/run/profiles/ci", ""); st != 204 {
		t.Fatal(st)
	}
	if _, m, _ = do(t, h, "GET", "/api/v1/run/profiles", ""); m["active"] != "" {
		t.Fatalf("active after deleting it: %v", m["active"])
	}
}

// TestGitSourceSyncsABareRepository drives the real git: a bare repository
// the test makes is cloned, then a new commit arrives with a second sync,
// and local edits are reset.
func TestGitSourceSyncsABareRepository(t *testing.T) {
	t.Parallel()
	h, ws := newHost(t)
	tmp := t.TempDir()
	bare, work := filepath.Join(tmp, "repo.git"), filepath.Join(tmp, "work")
	gitRun(t, tmp, "init", "--quiet", "--bare", "-b", "main", bare)
	gitRun(t, tmp, "clone", "--quiet", bare, work)
	if err := os.WriteFile(filepath.Join(work, "pkg.txt"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "--quiet", "-m", "one")
	gitRun(t, work, "push", "--quiet", "origin", "HEAD:main")
	c1 := gitRun(t, work, "rev-parse", "HEAD")

	st, m, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"pkg","type":"git","url":"`+bare+`","ref":"main","dir":"vendor/pkg"}`)
	if st != 201 {
		t.Fatalf("add: %d %s", st, raw)
	}
	id := m["id"].(string)
	st, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", "")
	sync, _ := m["sync"].(map[string]any)
	if st != 200 || sync["state"] != "ok" || sync["revision"] != c1 {
		t.Fatalf("sync: %d %s", st, raw)
	}
	dest := filepath.Join(ws, "vendor", "pkg", "pkg.txt")
	if b, err := os.ReadFile(dest); err != nil || string(b) != "v1\n" {
		t.Fatalf("synced file: %q %v", b, err)
	}

	if err := os.WriteFile(filepath.Join(work, "pkg.txt"), []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, work, "commit", "--quiet", "-am", "two")
	gitRun(t, work, "push", "--quiet", "origin", "HEAD:main")
	c2 := gitRun(t, work, "rev-parse", "HEAD")
	if err := os.WriteFile(dest, []byte("local edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, m, raw = do(t, h, "POST", "/api/v1/run/sources/sync", "")
	if st != 200 || m["ok"].(float64) != 1 || m["failed"].(float64) != 0 {
		t.Fatalf("sync all: %d %s", st, raw)
	}
	if b, _ := os.ReadFile(dest); string(b) != "v2\n" {
		t.Fatalf("after second sync: %q", b)
	}
	_, m, raw = do(t, h, "GET", "/api/v1/run/sources/"+id+"/diagnostics", "")
	sync, _ = m["sync"].(map[string]any)
	if sync["revision"] != c2 || sync["attempts"].(float64) != 2 || m["exists"] != true || !strings.HasPrefix(m["tool"].(string), "git version") {
		t.Fatalf("diagnostics: %s", raw)
	}
	if steps, _ := sync["steps"].([]any); len(steps) < 3 {
		t.Fatalf("steps: %s", raw)
	}

	// A ref that does not exist fails the sync, keeps the content and says why.
	if st, _, raw = do(t, h, "PATCH", "/api/v1/run/sources/"+id, `{"ref":"nope"}`, "If-Match", "1"); st != 200 {
		t.Fatalf("patch: %d %s", st, raw)
	}
	_, m, _ = do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", "")
	sync, _ = m["sync"].(map[string]any)
	if sync["state"] != "error" || !strings.Contains(sync["last_error"].(string), "nope") || sync["failures"].(float64) != 1 {
		t.Fatalf("failed sync: %v", m)
	}
	if b, _ := os.ReadFile(dest); string(b) != "v2\n" {
		t.Fatalf("content after a failed sync: %q", b)
	}
	if st, _, _ = do(t, h, "PATCH", "/api/v1/run/sources/"+id, `{"ref":"main"}`, "If-Match", "1"); st != 409 {
		t.Fatalf("stale patch: %d", st)
	}
	if st, _, _ = do(t, h, "DELETE", "/api/v1/run/sources/"+id+"?remove_files=true", ""); st != 204 {
		t.Fatal(st)
	}
	if _, err := os.Stat(filepath.Dir(dest)); !os.IsNotExist(err) {
		t.Fatalf("dir after delete: %v", err)
	}
}

func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func TestArchiveSourceExtractsSafely(t *testing.T) {
	t.Parallel()
	h, ws, _ := newHostDeps(t, "127.0.0.1") // the test server is on loopback
	good := tgz(t, map[string]string{"lib/a.txt": "A", "b.txt": "B"})
	evil := tgz(t, map[string]string{"../escape.txt": "X"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good.tar.gz":
			_, _ = w.Write(good)
		case "/evil.tar.gz":
			_, _ = w.Write(evil)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, m, _ := do(t, h, "POST", "/api/v1/run/sources", `{"name":"arch","type":"archive","url":"`+srv.URL+`/good.tar.gz"}`)
	id := m["id"].(string)
	_, m, raw := do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", "")
	if sync, _ := m["sync"].(map[string]any); sync["state"] != "ok" || !strings.HasPrefix(sync["revision"].(string), "sha256:") {
		t.Fatalf("sync: %s", raw)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "arch", "lib", "a.txt")); string(b) != "A" {
		t.Fatalf("extracted: %q", b)
	}
	_, _, _ = do(t, h, "PATCH", "/api/v1/run/sources/"+id, `{"url":"`+srv.URL+`/evil.tar.gz"}`)
	_, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", "")
	if sync, _ := m["sync"].(map[string]any); sync["state"] != "error" || !strings.Contains(sync["last_error"].(string), "..") {
		t.Fatalf("evil sync: %s", raw)
	}
	if _, err := os.Stat(filepath.Join(ws, "escape.txt")); !os.IsNotExist(err) {
		t.Fatal("an entry escaped the source's dir")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "arch", "b.txt")); string(b) != "B" {
		t.Fatalf("previous content lost: %q", b)
	}
	_, _, _ = do(t, h, "PATCH", "/api/v1/run/sources/"+id, `{"url":"`+srv.URL+`/missing.tar.gz"}`)
	_, m, _ = do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", "")
	if sync, _ := m["sync"].(map[string]any); !strings.Contains(sync["last_error"].(string), "404") {
		t.Fatalf("missing: %v", m)
	}
}

func TestSourceBadInput(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t)
	for _, c := range []struct{ body, field string }{
		{`{"name":"a","type":"svn","url":"x"}`, "type"},
		{`{"name":"a","type":"git"}`, "url"},
		{`{"name":"a","type":"git","url":"ext::sh -c touch% /tmp/pwned"}`, "url"},
		{`{"name":"a","type":"git","url":"--upload-pack=touch /tmp/x"}`, "url"},
		{`{"name":"a","type":"git","url":"/srv/r.git","ref":"--output=x"}`, "ref"},
		{`{"name":"a","type":"git","url":"/srv/r.git","dir":"../out"}`, "dir"},
		{`{"name":"a","type":"git","url":"/srv/r.git","dir":"/abs"}`, "dir"},
		{`{"name":"a","type":"archive","url":"file:///etc/passwd"}`, "url"},
		{`{"name":"","type":"git","url":"/srv/r.git"}`, "name"},
	} {
		st, m, raw := do(t, h, "POST", "/api/v1/run/sources", c.body)
		if st != 400 || m["details"] != c.field {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, st, raw, c.field)
		}
	}
	if st, _, _ := do(t, h, "POST", "/api/v1/run/sources", `{"name":"a","type":"git","url":"/srv/r.git","dir":"x/y"}`); st != 201 {
		t.Fatal(st)
	}
	if st, _, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"b","type":"git","url":"/srv/r.git","dir":"x"}`); st != 409 {
		t.Fatalf("overlapping dir: %d %s", st, raw)
	}
	for _, p := range []string{"/api/v1/run/sources/src_none/sync", "/api/v1/run/sources/src_none/diagnostics"} {
		method := "POST"
		if strings.HasSuffix(p, "diagnostics") {
			method = "GET"
		}
		if st, _, _ := do(t, h, method, p, ""); st != 404 {
			t.Errorf("%s: %d", p, st)
		}
	}
}

// TestConcurrentChanges: of racing PATCHes with the same If-Match exactly
// one applies; a sync in progress refuses a second sync and a delete.
func TestConcurrentChanges(t *testing.T) {
	t.Parallel()
	h, _, _ := newHostDeps(t, "127.0.0.1") // the test server is on loopback
	if st, _, _ := do(t, h, "POST", "/api/v1/run/profiles", `{"name":"p"}`); st != 201 {
		t.Fatal(st)
	}
	const n = 8
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			req := platformtest.NewRequest("PATCH", "/api/v1/run/profiles/p", strings.NewReader(`{"description":"d`+strconv.Itoa(i)+`"}`))
			req.Header.Set("If-Match", "1")
			resp, err := h.App().Test(req, fiber.TestConfig{Timeout: 0})
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}(i)
	}
	ok, conflicts := 0, 0
	for i := 0; i < n; i++ {
		switch <-codes {
		case 200:
			ok++
		case 409:
			conflicts++
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("%d applied, %d conflicts; want 1 and %d", ok, conflicts, n-1)
	}

	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = w.Write(tgz(t, map[string]string{"f": "x"}))
	}))
	t.Cleanup(srv.Close)
	_, m, _ := do(t, h, "POST", "/api/v1/run/sources", `{"name":"slow","type":"archive","url":"`+srv.URL+`/a.tgz"}`)
	id := m["id"].(string)
	done := make(chan int, 1)
	go func() {
		req := platformtest.NewRequest("POST", "/api/v1/run/sources/"+id+"/sync", nil)
		resp, err := h.App().Test(req, fiber.TestConfig{Timeout: 0})
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-started
	if st, _, raw := do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", ""); st != 409 {
		t.Errorf("second sync: %d %s", st, raw)
	}
	if st, _, raw := do(t, h, "DELETE", "/api/v1/run/sources/"+id, ""); st != 409 {
		t.Errorf("delete while syncing: %d %s", st, raw)
	}
	if _, m, _ = do(t, h, "GET", "/api/v1/run/sources/"+id+"/diagnostics", ""); m["syncing"] != true {
		t.Errorf("diagnostics while syncing: %v", m)
	}
	close(release)
	if st := <-done; st != 200 {
		t.Fatalf("first sync: %d", st)
	}
}

// TestURLCredentialsNeverShown: a password in a source URL is used for the
// sync but never answered, listed or put in the diagnostics.
func TestURLCredentialsNeverShown(t *testing.T) {
	t.Parallel()
	h, _, deps := newHostDeps(t, "127.0.0.0/8") // the test server is on loopback
	st, m, raw := do(t, h, "POST", "/api/v1/run/sources", `{"name":"priv","type":"git","url":"http://bot:hunter2@127.0.0.1:1/repo.git"}`)
	if st != 201 || strings.Contains(raw, "hunter2") || m["url"] != "http://bot:xxxxx@127.0.0.1:1/repo.git" {
		t.Fatalf("create: %d %s", st, raw)
	}
	id := m["id"].(string)
	_, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+id+"/sync", "")
	if sync, _ := m["sync"].(map[string]any); sync["state"] != "error" || strings.Contains(raw, "hunter2") {
		t.Fatalf("sync: %s", raw)
	}
	for _, p := range []string{"/api/v1/run/sources", "/api/v1/run/sources/" + id + "/diagnostics"} {
		if _, _, raw = do(t, h, "GET", p, ""); strings.Contains(raw, "hunter2") || !strings.Contains(raw, "bot:xxxxx@") {
			t.Fatalf("%s: %s", p, raw)
		}
	}

	// The stored credentials are what a sync uses, also after a change
	// that did not restate them.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "bot" || p != "hunter2" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(tgz(t, map[string]string{"f": "x"}))
	}))
	t.Cleanup(srv.Close)
	authURL := strings.Replace(srv.URL, "http://", "http://bot:hunter2@", 1) + "/a.tgz"
	_, m, _ = do(t, h, "POST", "/api/v1/run/sources", `{"name":"arch","type":"archive","url":"`+authURL+`"}`)
	aid := m["id"].(string)
	if _, _, raw = do(t, h, "PATCH", "/api/v1/run/sources/"+aid, `{"name":"arch2"}`); strings.Contains(raw, "hunter2") {
		t.Fatalf("patch: %s", raw)
	}
	_, m, raw = do(t, h, "POST", "/api/v1/run/sources/"+aid+"/sync", "")
	if sync, _ := m["sync"].(map[string]any); sync["state"] != "ok" || strings.Contains(raw, "hunter2") {
		t.Fatalf("sync with stored credentials: %s", raw)
	}
	// At rest the password is sealed: the store file never holds it.
	db, err := os.ReadFile(filepath.Join(deps.DataDir, "store.db"))
	if err != nil || bytes.Contains(db, []byte("hunter2")) || !bytes.Contains(db, []byte("bot:xxxxx@")) {
		t.Fatalf("store file holds the password (or no source): %v", err)
	}
}
