package platformtest

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// AcceptedCongestion connects to addr (host:port on loopback) and answers
// the congestion control of the server's end of that connection, as
// ss(8) reports it: what the server's accept path chose. It waits up to
// two seconds for reno, since the accept runs beside the dial, and then
// answers whatever the socket has.
func AcceptedCongestion(t testing.TB, addr string) string {
	t.Helper()
	if _, err := exec.LookPath("ss"); err != nil {
		t.Fatal("ss(8) is missing: scripts/setup.sh installs iproute2")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	server := c.RemoteAddr().(*net.TCPAddr).Port
	client := c.LocalAddr().(*net.TCPAddr).Port
	filter := fmt.Sprintf("( sport = :%d and dport = :%d )", server, client)
	var name string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, err := exec.Command("ss", "-Htin", "state", "established", filter).CombinedOutput()
		if err != nil {
			t.Fatalf("ss: %v: %s", err, out)
		}
		// The second line starts with the controller's name.
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) == 2 {
			if f := strings.Fields(lines[1]); len(f) > 0 {
				name = f[0]
			}
		}
		if name == "reno" || time.Now().After(deadline) {
			return name
		}
	}
}
