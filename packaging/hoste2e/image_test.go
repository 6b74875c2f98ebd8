package hoste2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// TestImage builds the OCI image with scripts/image.sh (make image),
// unpacks it with umoci, and runs its root file system the way a container
// runtime does (own PID and mount namespaces, /dev and /proc mounted,
// chroot): the agent is PID 1's child under deckhand's init, its daemon
// service brings Xvfb and openbox up, and the display service sees the
// screen.
func TestImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running the image's root file system needs root (namespaces, chroot)")
	}
	if _, err := exec.LookPath("umoci"); err != nil {
		t.Fatal("umoci is missing (scripts/setup.sh installs it)")
	}
	bins := t.TempDir()
	run(t, "cp", agentBin, filepath.Join(bins, "deckhand"))
	if display := filepath.Join(filepath.Dir(agentBin), "deckhand-display"); fileExists(display) {
		run(t, "cp", display, filepath.Join(bins, "deckhand-display"))
	}
	out := filepath.Join(t.TempDir(), "image")
	cmd := exec.Command("bash", filepath.Join(repo(t), "scripts", "image.sh"), "v0.0.0-test", out)
	cmd.Env = append(os.Environ(), "BIN="+bins, "PKG="+packager(t))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("image.sh: %v\n%s", err, b)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	run(t, "umoci", "unpack", "--image", out+":latest", bundle)
	stat := run(t, "umoci", "stat", "--image", out+":latest", "--json")
	if !strings.Contains(stat, "history") && !strings.Contains(stat, "layer") {
		t.Logf("umoci stat: %s", stat)
	}
	var rt struct {
		Process struct{ Args, Env []string }
	}
	raw, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil || json.Unmarshal(raw, &rt) != nil || len(rt.Process.Args) < 2 || rt.Process.Args[0] != "/usr/bin/deckhand" {
		t.Fatalf("runtime config from the image: %v %s", err, raw)
	}

	root := filepath.Join(bundle, "rootfs")
	base := platformtest.FreePortBase(t, 16)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	// The image's own command, with a loopback port of this test.
	args := append([]string{}, rt.Process.Args...)
	args = append(args, "--listen", gw, "--port-base", strconv.Itoa(base))
	script := "mount --rbind /dev " + root + "/dev && mount -t proc proc " + root + "/proc && exec /usr/sbin/chroot " + root + " " + strings.Join(args, " ")
	c := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount", "--propagation", "private", "sh", "-c", script)
	c.Env = rt.Process.Env
	var logs platformtest.SyncBuffer
	c.Stdout, c.Stderr = &logs, &logs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM) // --kill-child ends the namespace
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + gw + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(60 * time.Second) // hang guard
	for {
		code, body := get("/_/daemon/api/v1/daemon/programs")
		if code == 200 && strings.Count(body, `"state":"running"`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Xvfb and openbox not running under the image's agent: %d %s\n%s", code, body, logs.String())
		}
		select {
		case <-done:
			t.Fatalf("the image's agent exited:\n%s", logs.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	code, body := get("/_agent/status")
	var st struct{ Agent struct{ PID int } }
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.Agent.PID <= 1 {
		t.Fatalf("agent status: %d %s (the agent must run under deckhand's init, PID 1)", code, body)
	}
	// The display service connects once Xvfb accepts clients.
	for {
		code, body := get("/_/display/api/v1/display/info")
		if code == 200 && strings.Contains(body, `"width":1280`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("display info: %d %s", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
