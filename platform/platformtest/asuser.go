package platformtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nobody is the uid (and gid) AsUser runs a second local user's requests
// as: one the agent never trusts unless told to.
const Nobody = 65534

// AsUser sends one HTTP request with curl, run as another local user
// (uid and gid uid, no supplementary groups), and returns the status and
// the body. The test is skipped unless it runs as root (only root starts
// a process as another user) and curl is installed (scripts/setup.sh).
// hdr are "Name: value" lines.
func AsUser(t testing.TB, uid int, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a request as another local user")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (scripts/setup.sh)")
	}
	args := []string{"-sS", "--noproxy", "*", "-X", method, "-o", "-", "-w", "\n%{http_code}", "--max-time", "20"}
	for _, h := range hdr {
		args = append(args, "-H", h)
	}
	if body != "" {
		args = append(args, "--data-binary", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, curl, append(args, url)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl as uid %d %s %s: %v %s", uid, method, url, err, stderr.String())
	}
	s := string(out)
	i := strings.LastIndexByte(s, '\n')
	status, err := strconv.Atoi(s[i+1:])
	if err != nil {
		t.Fatalf("curl as uid %d: unreadable status in %q", uid, s)
	}
	return status, s[:i]
}
