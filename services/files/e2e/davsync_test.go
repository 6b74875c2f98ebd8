package e2e_test

import (
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// WebDAV creates directories (MKCOL) and files (PUT) with 0777 and 0666
// less the agent's umask, as mkdir(1) and a shell redirection would.
func TestDAVModesFollowTheUmask(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		umask     string
		dir, file fs.FileMode
	}{
		{"022", 0o755, 0o644},
		{"027", 0o750, 0o640},
		{"002", 0o775, 0o664},
	} {
		t.Run(tc.umask, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dav := startAgentUmask(t, root, tc.umask) + "/_/files/dav"
			for _, r := range []struct{ method, path, body string }{
				{"MKCOL", "/d", ""}, {"PUT", "/d/f.txt", "content"},
			} {
				req, _ := http.NewRequest(r.method, dav+r.path, strings.NewReader(r.body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Fatalf("%s %s: %d", r.method, r.path, resp.StatusCode)
				}
			}
			for p, want := range map[string]fs.FileMode{"d": tc.dir, "d/f.txt": tc.file} {
				fi, err := os.Stat(filepath.Join(root, p))
				if err != nil || fi.Mode().Perm() != want {
					t.Errorf("%s: %v %v, want %v", p, fi.Mode().Perm(), err, want)
				}
			}
		})
	}
}

// With vendor owncloud or nextcloud rclone reads the oc:checksums the
// service answers: `rclone check` compares content without --download
// (0 differences after a sync, a changed file of the same size and mtime
// reported), and `rclone sync --checksum` puts the changed file back.
// Through the agent's gateway, as a user's remote points at it.
func TestRcloneChecksumsWithoutDownload(t *testing.T) {
	need(t, "rclone")
	t.Parallel()
	for _, vendor := range []string{"owncloud", "nextcloud"} {
		t.Run(vendor, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			gw := startAgent(t, root)
			src := t.TempDir()
			tree := map[string]string{
				"a.txt":           "alpha",
				"dir/b.bin":       strings.Repeat("\x00\x01binary", 50000),
				"dir/sub/c.txt":   "gamma",
				"with space/ü.md": "unicode name",
				"empty":           "",
			}
			for name, content := range tree {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755))
				must(t, os.WriteFile(filepath.Join(src, name), []byte(content), 0o644))
			}
			rclone := func(args ...string) (string, error) {
				t.Helper()
				cmd := exec.Command("rclone", append([]string{"--config", "/dev/null", "--webdav-url", gw + "/_/files/dav/",
					"--webdav-vendor", vendor, "--low-level-retries", "1", "--retries", "1"}, args...)...)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := rclone("sync", src, ":webdav:in"); err != nil {
				t.Fatalf("sync: %v\n%s", err, out)
			}
			out, err := rclone("check", src, ":webdav:in")
			if err != nil || !strings.Contains(out, "0 differences found") || strings.Contains(out, "hash") {
				t.Fatalf("check after sync: %v\n%s", err, out)
			}

			// The same size and modification time: only a hash tells.
			remote := filepath.Join(root, "in", "dir", "sub", "c.txt")
			fi, err := os.Stat(remote)
			must(t, err)
			must(t, os.WriteFile(remote, []byte("GAMMA"), 0o644))
			must(t, os.Chtimes(remote, fi.ModTime(), fi.ModTime()))
			out, err = rclone("check", src, ":webdav:in")
			if err == nil || !strings.Contains(out, "1 differences found") || !strings.Contains(out, "dir/sub/c.txt") {
				t.Fatalf("check after a change: %v\n%s", err, out)
			}
			if out, err := rclone("sync", "--checksum", src, ":webdav:in"); err != nil {
				t.Fatalf("sync --checksum: %v\n%s", err, out)
			}
			if b, _ := os.ReadFile(remote); string(b) != "gamma" {
				t.Fatalf("sync --checksum left %q", b)
			}
			if out, err := rclone("check", src, ":webdav:in"); err != nil || !strings.Contains(out, "0 differences found") {
				t.Fatalf("check after sync --checksum: %v\n%s", err, out)
			}
		})
	}
}

// The rclone commands of docs/using/files.md, run as written from a
// directory holding ./site, against a live agent: they name the agent's
// gateway at its default address, which the test's agent has on another
// port (7700 may be taken here), the one thing changed.
func TestDocsRcloneCommandsRun(t *testing.T) {
	need(t, "rclone")
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "using", "files.md"))
	must(t, err)
	const written = "http://127.0.0.1:7700/_/files/dav/"
	var cmds []string
	inCode := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode && strings.HasPrefix(line, "rclone ") {
			if !strings.Contains(line, written) {
				t.Fatalf("docs/using/files.md's rclone command does not name the agent's gateway (%s): %s", written, line)
			}
			cmds = append(cmds, line)
		}
	}
	if len(cmds) < 2 {
		t.Fatalf("docs/using/files.md has %d rclone commands, want sync and check", len(cmds))
	}
	root := t.TempDir()
	gw := startAgent(t, root)
	work := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(work, "site", "css"), 0o755))
	must(t, os.WriteFile(filepath.Join(work, "site", "index.html"), []byte("<link href=/css/style.css>"), 0o644))
	must(t, os.WriteFile(filepath.Join(work, "site", "css", "style.css"), []byte("body{}"), 0o644))
	for _, c := range cmds {
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(c, written, gw+"/_/files/dav/"))
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
		if strings.HasPrefix(c, "rclone check") && !strings.Contains(string(out), "0 differences found") {
			t.Fatalf("%s:\n%s", c, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "site", "css", "style.css")); err != nil || string(b) != "body{}" {
		t.Fatalf("the synced site: %q %v", b, err)
	}
}
