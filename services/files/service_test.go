package files_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

func newHost(t *testing.T, root string) *platform.Host {
	t.Helper()
	svc, err := files.New(platformtest.ServiceDeps(t, "files"), &files.Settings{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return platformtest.ServiceHost(t, svc)
}

func send(t *testing.T, h *platform.Host, method, target, body string) (int, string) {
	t.Helper()
	resp, err := h.App().Test(platformtest.NewRequest(method, target, strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	platformtest.CheckRoutesDocumented(t, newHost(t, t.TempDir()))
}

func TestBadQueryParametersAreNamed(t *testing.T) {
	t.Parallel()
	if n := platformtest.CheckQueryValidation(t, newHost(t, t.TempDir())); n == 0 {
		t.Fatal("files declares no query parameters to check")
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var v map[string]string
	status, raw := platformtest.GetJSON(t, newHost(t, t.TempDir()), "/api/v1/version", &v)
	if status != 200 || len(v) != 2 || v["server_version"] != platform.Version || v["version"] != files.APIVersion {
		t.Fatalf("%d %s", status, raw)
	}
}

func TestWriteReadList(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := newHost(t, root)
	if status, body := send(t, h, "PUT", "/api/v1/files/content?path=/notes/a.txt", "hello"); status != 201 || !strings.Contains(body, `"path":"/notes/a.txt"`) {
		t.Fatalf("create: %d %s", status, body)
	}
	if b, err := os.ReadFile(filepath.Join(root, "notes", "a.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("on disk: %q %v", b, err)
	}
	if status, body := send(t, h, "PUT", "/api/v1/files/content?path=/notes/a.txt&overwrite=false", "x"); status != 409 || !strings.Contains(body, "CONFLICT") {
		t.Fatalf("overwrite=false: %d %s", status, body)
	}
	if status, _ := send(t, h, "PUT", "/api/v1/files/content?path=/notes/a.txt&overwrite=1", "hello again"); status != 200 {
		t.Fatalf("replace: %d", status)
	}
	if status, body := send(t, h, "GET", "/api/v1/files/content?path=/notes/../notes/a.txt", ""); status != 200 || body != "hello again" {
		t.Fatalf("read: %d %q", status, body)
	}
	_ = os.WriteFile(filepath.Join(root, "notes", ".hidden"), nil, 0o600)
	status, body := send(t, h, "GET", "/api/v1/files?path=/notes", "")
	if status != 200 || !strings.Contains(body, `"name":"a.txt"`) || strings.Contains(body, ".hidden") {
		t.Fatalf("list: %d %s", status, body)
	}
	if status, body = send(t, h, "GET", "/api/v1/files?path=/notes&hidden=true", ""); !strings.Contains(body, ".hidden") {
		t.Fatalf("hidden=true: %d %s", status, body)
	}
	if status, body = send(t, h, "GET", "/api/v1/files/content?path=/nope", ""); status != 404 {
		t.Fatalf("missing: %d %s", status, body)
	}
}

// Nothing outside the root is reachable: not with "..", not through a
// symbolic link pointing out.
func TestRootConfines(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, root)
	rel, _ := filepath.Rel(root, filepath.Join(outside, "secret"))
	for _, target := range []string{
		"/api/v1/files/content?path=/" + rel,
		"/api/v1/files/content?path=/out/secret",
		"/api/v1/files?path=/out",
	} {
		if status, body := send(t, h, "GET", target, ""); status < 400 || strings.Contains(body, "s3cret") {
			t.Errorf("%s: %d %s", target, status, body)
		}
	}
	if status, _ := send(t, h, "PUT", "/api/v1/files/content?path=/out/planted", "x"); status < 400 {
		t.Errorf("write through the link: %d", status)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("a file was written outside the root")
	}
	if status, body := send(t, h, "GET", "/api/v1/files?path=relative", ""); status != 400 || !strings.Contains(body, `"details":"path"`) {
		t.Errorf("relative path: %d %s", status, body)
	}
}
