package e2e_test

import (
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
