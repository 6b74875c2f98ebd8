package platformtest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"deckhand/platform/proc"
)

// SessionBus starts a private D-Bus session bus for the test, with
// XDG_RUNTIME_DIR a directory of the test's own (so the services it starts
// on demand, such as the accessibility bus, keep their sockets there), and
// answers the environment its clients need. The bus and what it started
// end with the test.
func SessionBus(t testing.TB) []string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("dbus-daemon is not installed (scripts/setup.sh installs dbus)")
	}
	runtime := t.TempDir()
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
	// Its own process group: the services the bus starts on demand (the
	// accessibility bus launcher and its daemon) are its children and end
	// with it, not orphaned past the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return []string{"DBUS_SESSION_BUS_ADDRESS=" + strings.TrimSpace(line), "XDG_RUNTIME_DIR=" + runtime}
}
