package e2e_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
)

// TestServicesGrantOnlyReadsTheDesktop: with a real display and an xterm
// on it, a services grant reads the screen (screenshot, windows, the
// takeover view in mode view) but may not type, click or take control
// (403, and nothing runs in the xterm); a desktop grant types a command
// into the xterm and it runs.
func TestServicesGrantOnlyReadsTheDesktop(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (run through `make test`, or set DECKHAND_BIN to a directory holding both)")
	}
	xterm, err := exec.LookPath("xterm")
	if err != nil {
		t.Skip("xterm is not installed")
	}
	display := platformtest.StartXvfb(t, "800x600x24")
	doc := `{"project":"p1","container":"c1","default":"deny","groups":{
		"svc":{"type":"token","header":"X-Key","value":"svc"},
		"desk":{"type":"token","header":"X-Key","value":"desk"}},
		"permissions":{"svc":{"services":true},"desk":{"desktop":true,"services":true}}}`
	perm := filepath.Join(t.TempDir(), "perm.json")
	if err := os.WriteFile(perm, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, "--display", display, "--services", "display", "--permissions-file", perm)
	a.waitFor(t, "display running", allRunning)

	// An xterm filling the screen, with a shell in a directory of its own.
	dir := t.TempDir()
	term := exec.Command(xterm, "-geometry", "100x40+0+0", "-e", "/bin/sh")
	term.Dir, term.Env = dir, append(cleanEnv(), "DISPLAY="+display, "PS1=$ ")
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = term.Process.Kill(); _ = term.Wait() })

	base := "http://" + a.gw + "/_/display/api/v1/display"
	call := func(key, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("X-Key", key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw := make([]byte, 512)
		n, _ := resp.Body.Read(raw)
		return resp.StatusCode, string(raw[:n])
	}
	// The xterm is up once the display lists a window.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, raw := call("svc", "GET", "/windows", "")
		if st == 200 && strings.Contains(raw, `"pid":`+strconv.Itoa(term.Process.Pid)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the xterm never appeared: %d %s\n%s", st, raw, a.out)
		}
		time.Sleep(100 * time.Millisecond)
	}

	marker := filepath.Join(dir, "ran")
	typed := `{"text":"touch ` + marker + `\n"}`
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/mouse/click", `{"x":200,"y":200}`},
		{"POST", "/keyboard/type", typed},
		{"POST", "/keyboard/key", `{"key":"Return"}`},
		{"POST", "/input/act", `{"action":"type","text":"id\n"}`},
		{"POST", "/input/batch", `{"steps":[{"action":"type","text":"id\n"}]}`},
		{"POST", "/clipboard", `{"text":"touch ` + marker + `"}`},
		{"POST", "/takeover", `{}`},
		{"GET", "/vnc/", ""},
		{"GET", "/vnc/?mode=control", ""},
		{"GET", "/VNC/websockify/", ""},
		{"POST", "/Keyboard/%74ype", typed},
	} {
		if st, raw := call("svc", c.method, c.path, c.body); st != http.StatusForbidden {
			t.Errorf("services grant, %s %s: %d %s, want 403", c.method, c.path, st, raw)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/screenshots"}, {"GET", "/windows"}, {"GET", "/vnc/?mode=view"},
	} {
		if st, raw := call("svc", c.method, c.path, ""); st != http.StatusOK {
			t.Errorf("services grant, %s %s: %d %s, want 200", c.method, c.path, st, raw)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a services grant ran a command in the xterm")
	}

	// The desktop grade drives it.
	if st, raw := call("desk", "POST", "/mouse/click", `{"x":200,"y":200}`); st != 200 {
		t.Fatalf("desktop grant click: %d %s", st, raw)
	}
	if st, raw := call("desk", "POST", "/keyboard/type", typed); st != 200 {
		t.Fatalf("desktop grant type: %d %s", st, raw)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command typed with a desktop grant never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, raw := call("desk", "GET", "/vnc/", ""); st != http.StatusOK {
		t.Errorf("desktop grant, the takeover view in control: %d %s", st, raw)
	}
}
