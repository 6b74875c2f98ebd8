package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// litmus, the WebDAV compliance suite, passes every test against the real
// service (stock golang.org/x/net/webdav fails dead properties, the
// complex conditional PUT and shared locks).
func TestLitmusPassesEverything(t *testing.T) {
	need(t, "litmus")
	t.Parallel()
	p := start(t, t.TempDir())
	litmus(t, p.url+"/dav/")
}

// Through the agent's gateway (/_/files/dav/) too: hrefs and Destination
// headers carry the gateway's prefix and host.
func TestLitmusThroughTheGateway(t *testing.T) {
	need(t, "litmus")
	t.Parallel()
	gw := startAgent(t, t.TempDir())
	litmus(t, gw+"/_/files/dav/")
}

func litmus(t *testing.T, url string) {
	t.Helper()
	cmd := exec.Command("litmus", url)
	cmd.Dir = t.TempDir() // litmus writes debug.log and child.log here
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("litmus: %v\n%s", err, out)
	}
	sums := regexp.MustCompile(`summary for `+"`"+`(\w+)': of (\d+) tests run: (\d+) passed, (\d+) failed`).FindAllStringSubmatch(string(out), -1)
	suites := map[string]bool{}
	for _, m := range sums {
		suites[m[1]] = true
		if m[2] != m[3] || m[4] != "0" {
			t.Errorf("suite %s: %s of %s passed\n%s", m[1], m[3], m[2], out)
		}
	}
	for _, s := range []string{"basic", "copymove", "props", "locks", "http"} {
		if !suites[s] {
			t.Errorf("suite %s did not run:\n%s", s, out)
		}
	}
	if strings.Contains(string(out), "SKIPPED") {
		t.Errorf("tests were skipped:\n%s", out)
	}
}

// rclone copies a tree in and out over WebDAV, byte for byte.
func TestRcloneCopiesATreeInAndOut(t *testing.T) {
	need(t, "rclone")
	t.Parallel()
	root := t.TempDir()
	p := start(t, root)
	src := t.TempDir()
	want := map[string]string{
		"a.txt":             "alpha",
		"dir/b.bin":         strings.Repeat("\x00\x01binary", 50000),
		"dir/sub/c.txt":     "gamma",
		"with space/ü ñ.md": "unicode name",
		"empty":             "",
	}
	for name, content := range want {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(src, name), []byte(content), 0o644))
	}
	rclone := func(args ...string) {
		t.Helper()
		cmd := exec.Command("rclone", append([]string{"--config", "/dev/null", "--webdav-url", p.url + "/dav/"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rclone %v: %v\n%s", args, err, out)
		}
	}
	rclone("copy", src, ":webdav:in")
	for name, content := range want {
		b, err := os.ReadFile(filepath.Join(root, "in", name))
		if err != nil || string(b) != content {
			t.Errorf("in %s: %v (%d bytes)", name, err, len(b))
		}
	}
	dst := t.TempDir()
	rclone("copy", ":webdav:in", dst)
	for name, content := range want {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(b) != content {
			t.Errorf("out %s: %v (%d bytes)", name, err, len(b))
		}
	}
	rclone("check", src, ":webdav:in")
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cadaver, the command-line WebDAV client, runs a session of every kind
// of request against the real service.
func TestCadaverSession(t *testing.T) {
	need(t, "cadaver")
	t.Parallel()
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "a.txt"), []byte("hello\n"), 0o644))
	must(t, os.Symlink(".", filepath.Join(root, "loop")))
	p := start(t, root)
	got := filepath.Join(t.TempDir(), "got.txt")
	script := strings.Join([]string{"ls", "cd d", "ls", "get a.txt " + got, "put " + got + " b.txt", "mkcol sub",
		"copy b.txt sub/c.txt", "move sub/c.txt sub/e.txt", "ls sub", "propset b.txt myprop myvalue", "propget b.txt myprop",
		"lock b.txt", "unlock b.txt", "rm b.txt", "rmcol sub", "quit", ""}, "\n")
	cmd := exec.Command("cadaver", p.url+"/dav/")
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cadaver: %v\n%s", err, out)
	}
	s := string(out)
	if n := strings.Count(s, "succeeded"); n != 13 || strings.Contains(s, "failed") || !strings.Contains(s, "Value of myprop is: myvalue") ||
		!strings.Contains(s, "e.txt") || !strings.Contains(s, "loop") {
		t.Fatalf("%d succeeded:\n%s", n, s)
	}
	if b, err := os.ReadFile(got); err != nil || string(b) != "hello\n" {
		t.Fatalf("got %q %v", b, err)
	}
}

// A PROPFIND of infinite depth over a tree of links to itself (a walk
// that follows 4 links to "." 8 levels deep meets 174,762 entries) is
// refused at once, and the service's peak memory does not move; Depth 1
// lists the links without walking them.
func TestSymlinkLoopPropfindKeepsRSSFlat(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, n := range []string{"l1", "l2", "l3", "l4"} {
		must(t, os.Symlink(".", filepath.Join(root, n)))
	}
	p := start(t, root)
	propfind := func(path string, depth ...string) (int, string) {
		req, _ := http.NewRequest("PROPFIND", p.url+path, nil)
		if len(depth) > 0 {
			req.Header.Set("Depth", depth[0])
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	propfind("/dav/", "0") // the runtime's steady state
	base := p.status("VmHWM")
	var refusals []string
	for _, depth := range [][]string{nil, {"infinity"}} {
		status, body := propfind("/dav/", depth...)
		if status != 403 || !strings.Contains(body, "propfind-finite-depth") {
			refusals = append(refusals, fmt.Sprintf("Depth %v: %d %.300s", depth, status, body))
		}
	}
	status, body := propfind("/dav/l1/l2/l3/", "1")
	if n := strings.Count(body, "<D:response>"); status != 207 || n != 5 {
		t.Errorf("Depth 1: %d, %d responses", status, n)
	}
	peak := p.status("VmHWM")
	t.Logf("VmHWM %d KiB before, %d KiB after", base>>10, peak>>10)
	if peak > base+8<<20 {
		t.Errorf("peak memory grew by %d MiB", (peak-base)>>20)
	}
	for _, r := range refusals {
		t.Error(r)
	}
}
