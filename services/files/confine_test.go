package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/services/files"
)

// The traversal corpus: nothing outside the root is ever read, listed or
// written, whatever the spelling; escapes answer 403 OUTSIDE_ROOT.
func TestTraversalCorpusNeverEscapes(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "in", "deep"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))                            // absolute link out
	must(t, os.Symlink("../../../../../../"+outside, filepath.Join(root, "in", "rel"))) // relative link out
	must(t, os.Symlink("loop2", filepath.Join(root, "loop1")))                          // loop
	must(t, os.Symlink("loop1", filepath.Join(root, "loop2")))
	must(t, os.Symlink("/etc", filepath.Join(root, "in", "etc")))
	base, _ := serve(t, files.Settings{Root: root})
	relOut, _ := filepath.Rel(root, filepath.Join(outside, "secret"))

	escapes := []string{
		"/" + relOut,
		"/../secret",
		"/in/../../secret",
		"/%2e%2e/secret",
		"/in/%2E%2E/%2e%2e/secret",
		"/..%2fsecret",
		"/in/deep/../../../" + filepath.Base(outside) + "/secret",
		"/out/secret",
		"/out",
		"/in/rel/secret",
		"/in/etc/passwd",
		"/loop1",
		"/loop1/x",
	}
	for _, p := range escapes {
		for _, ep := range []struct{ method, url string }{
			{"GET", "/api/v1/files/content?path=" + p},
			{"GET", "/api/v1/files/stat?path=" + p + "/x"},
			{"GET", "/api/v1/files?path=" + p},
			{"PUT", "/api/v1/files/content?path=" + p + "/planted"},
			{"PUT", "/api/v1/files/content?path=" + p},
			{"GET", "/api/v1/files/archive?path=" + p},
			{"GET", "/api/v1/files/search?name=*&path=" + p},
			{"PROPFIND", "/dav" + p},
			{"PUT", "/dav" + p + "/planted"},
			{"GET", "/dav" + p},
		} {
			status, _, body := call(t, ep.method, base+ep.url, str("planted"), "Depth", "1")
			if strings.Contains(body, "s3cret") || strings.Contains(body, "root:x:0") || status < 400 {
				t.Errorf("%s %s: %d %s", ep.method, ep.url, status, body)
				continue
			}
			if ep.method == "GET" && strings.HasPrefix(ep.url, "/api/v1/files/content") && (status != 403 || !strings.Contains(body, "OUTSIDE_ROOT")) {
				t.Errorf("%s %s: want 403 OUTSIDE_ROOT, got %d %s", ep.method, ep.url, status, body)
			}
		}
	}
	// Absolute-path tricks stay inside the root: //etc is the root's /etc.
	for _, p := range []string{"//etc/passwd", "/./etc/passwd", "/proc/self/root/etc/passwd"} {
		status, _, body := call(t, "GET", base+"/api/v1/files/content?path="+p, nil)
		if status != 404 || strings.Contains(body, "root:x:0") {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}
	// Moves and copies out are refused too.
	for _, body := range []string{`{"from":"/in","to":"/out/in"}`, `{"from":"/out/secret","to":"/stolen"}`, `{"from":"/in","to":"/../in"}`} {
		for _, op := range []string{"move", "copy"} {
			if status, _, raw := call(t, "POST", base+"/api/v1/files/"+op, str(body)); status < 400 {
				t.Errorf("%s %s: %d %s", op, body, status, raw)
			}
		}
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("something was written outside the root: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(root, "stolen")); err == nil {
		t.Error("a file from outside was copied in")
	}
	if _, err := os.Stat(filepath.Join(root, "in")); err != nil {
		t.Error("the refused move removed its source")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
