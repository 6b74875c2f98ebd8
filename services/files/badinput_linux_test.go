package files_test

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"deckhand/services/files"
)

// tmpfs mounts a small tmpfs (root only) and unmounts it at cleanup.
func tmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// A full disk answers 507 and leaves neither the file nor a temporary.
func TestDiskFullIs507(t *testing.T) {
	root := tmpfs(t, "size=1m")
	base, _ := serve(t, files.Settings{Root: root})
	status, _, body := call(t, "PUT", base+"/api/v1/files/content?path=/big", str(strings.Repeat("x", 3<<20)))
	if status != 507 || !strings.Contains(body, "INSUFFICIENT_STORAGE") {
		t.Fatalf("%d %s", status, body)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("leftovers: %v", ents)
	}
}

// Writing to a read-only place answers 403 with the OS reason.
func TestReadOnlyPlaceIs403WithReason(t *testing.T) {
	root := tmpfs(t, "size=1m")
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	if err := syscall.Mount("", root, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("remount ro: %v", err)
	}
	base, _ := serve(t, files.Settings{Root: root})
	for _, tc := range []struct{ method, url, body string }{
		{"PUT", "/api/v1/files/content?path=/f", "y"},
		{"POST", "/api/v1/files/mkdir", `{"path":"/d"}`},
		{"DELETE", "/api/v1/files?path=/f", ""},
	} {
		status, _, body := call(t, tc.method, base+tc.url, str(tc.body))
		if status != 403 || !strings.Contains(body, "read-only file system") {
			t.Errorf("%s %s: %d %s", tc.method, tc.url, status, body)
		}
	}
}

// With --files-user the kernel checks permissions as that user and new
// files belong to it.
func TestFilesUserActsAsThatUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as another user needs root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	root := t.TempDir()
	must(t, os.Chmod(root, 0o755))
	must(t, os.Mkdir(filepath.Join(root, "open"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "open"), 0o777)) // past the umask
	must(t, os.WriteFile(filepath.Join(root, "private"), []byte("root only"), 0o600))
	base, _ := serve(t, files.Settings{Root: root, User: "nobody"})
	if status, _, body := call(t, "PUT", base+"/api/v1/files/content?path=/open/mine", str("x")); status != 201 || !strings.Contains(body, `"owner":"nobody"`) {
		t.Fatalf("write as nobody: %d %s", status, body)
	}
	fi, _ := os.Stat(filepath.Join(root, "open", "mine"))
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != atoi(u.Uid) {
		t.Fatalf("owned by %d", st.Uid)
	}
	if status, _, body := call(t, "PUT", base+"/api/v1/files/content?path=/notmine", str("x")); status != 403 || !strings.Contains(body, "permission denied") {
		t.Fatalf("write into root's directory: %d %s", status, body)
	}
	if status, _, body := call(t, "GET", base+"/api/v1/files/content?path=/private", nil); status != 403 || strings.Contains(body, "root only") {
		t.Fatalf("read root's 0600 file: %d %s", status, body)
	}
	// The agent's own threads are unaffected: root still reads the file.
	if b, err := os.ReadFile(filepath.Join(root, "private")); err != nil || string(b) != "root only" {
		t.Fatalf("agent lost its credentials: %v", err)
	}
}

func atoi(s string) uint32 {
	var n uint32
	for _, c := range s {
		n = n*10 + uint32(c-'0')
	}
	return n
}
