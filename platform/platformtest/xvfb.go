package platformtest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartXvfb starts a virtual X server with one screen of the given size
// ("WxHxD") for the test's lifetime and answers its display (":N"). The
// server picks the display itself (-displayfd: the first number whose lock
// it takes), so tests running at once, in this package or another, never
// share one, and it names the display only once it accepts clients.
// Without Xvfb the test is skipped.
func StartXvfb(t testing.TB, screen string) string {
	t.Helper()
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("Xvfb is not installed (scripts/setup.sh installs it)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	x := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", screen, "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{w} // descriptor 3 in the server
	err = x.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Process.Kill(); _ = x.Wait() })
	_ = r.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(r).ReadString('\n')
	n := strings.TrimSpace(line)
	if err != nil || n == "" {
		t.Fatalf("Xvfb named no display within 30 s: %q %v", line, err)
	}
	return ":" + n
}
