package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/display/accessibility"
	"deckhand/platform/platformtest"
)

// TestProgramsGetTheDesktop: the agent is given its display by flag only
// (no DISPLAY in its environment) and a session bus; a program started
// through the process service gets both, and a GTK window it opens appears
// in the display service's accessibility tree.
func TestProgramsGetTheDesktop(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		t.Skip("deckhand-display is not beside deckhand (run through `make test`, or set DECKHAND_BIN to a directory holding both)")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import gi; gi.require_version('Gtk', '3.0')").Run(); err != nil {
		t.Fatal("python3-gi with GTK 3 is missing (scripts/setup.sh installs python3-gi gir1.2-gtk-3.0 at-spi2-core)")
	}
	display := platformtest.StartXvfb(t, "640x480x24")
	env := platformtest.SessionBus(t)
	a := startEnv(t, env, "--display", display, "--services", "display,process")
	a.waitFor(t, "display and process running", allRunning)
	base := "http://" + a.gw + "/_/"

	status, m, raw := send(t, "POST", base+"process/api/v1/process/run",
		`{"shell":"echo \"$DISPLAY|$DBUS_SESSION_BUS_ADDRESS|$XDG_RUNTIME_DIR\""}`)
	want := display + "|" + strings.TrimPrefix(env[0], "DBUS_SESSION_BUS_ADDRESS=") + "|" + strings.TrimPrefix(env[1], "XDG_RUNTIME_DIR=")
	if status != 200 || strings.TrimSpace(m["stdout"].(string)) != want {
		t.Fatalf("a program's desktop: %d %s, want %q", status, raw, want)
	}

	script, _ := filepath.Abs(filepath.Join("..", "..", "display", "x11", "testdata", "a11y_app.py"))
	cmd, _ := json.Marshal(map[string]any{"cmd": []string{"/usr/bin/python3", script, "Env Probe"}})
	status, started, raw := send(t, "POST", base+"process/api/v1/process", string(cmd))
	if status != 201 {
		t.Fatalf("start the GTK window: %d %s", status, raw)
	}
	// stop its whole tree (GTK started the accessibility bus launcher in
	// it) before the agent stops
	t.Cleanup(func() { send(t, "DELETE", base+"process/api/v1/process/"+started["id"].(string), "") })
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _, raw := get(t, base+"display/api/v1/display/accessibility?scope=all&depth=1")
		var tr accessibility.AccessibilityTree
		_ = json.Unmarshal(raw, &tr)
		found := false
		for _, app := range tr.Nodes {
			for _, w := range app.Children {
				found = found || (w.Role == "frame" && w.Name == "Env Probe")
			}
		}
		if status == 200 && found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window never appeared in the tree: %d %s\n%s", status, raw, a.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
