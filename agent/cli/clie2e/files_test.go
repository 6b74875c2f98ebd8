package clie2e_test

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"deckhand/platform/platformtest"
)

// bigFile writes n random bytes and answers the file and its SHA-256.
func bigFile(t testing.TB, dir string, n int64) (string, string) {
	t.Helper()
	p := filepath.Join(dir, "big.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p, hex.EncodeToString(h.Sum(nil))
}

func sha256File(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// transfer is cp's -o json answer.
type transfer struct {
	Direction   string `json:"direction"`
	Destination string `json:"destination"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	ResumedFrom int64  `json:"resumed_from"`
	Reconnects  int    `json:"reconnects"`
}

func transferOf(t *testing.T, out string) transfer {
	t.Helper()
	var tr transfer
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("cp -o json: %v\n%s", err, out)
	}
	return tr
}

// startKilled runs a deckhand command in the background; kill ends it with
// SIGKILL, as a crash or a lost laptop lid would.
func (u *user) startKilled(args ...string) (kill func()) {
	u.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = u.env
	cmd.Dir = u.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out := &platformtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		u.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once bool
	kill = func() {
		if once {
			return
		}
		once = true
		_ = cmd.Process.Kill()
		<-done
	}
	u.t.Cleanup(kill)
	return kill
}

const (
	bigSize   = 50 << 20
	stallAt   = 12 << 20
	uploads   = "/_/files/api/v1/files/uploads/"
	downloads = "/_/files/api/v1/files/content"
)

// A 50 MB file goes up and comes back down, each way killed once in the
// middle and finished by running the same command again, which resumes
// where the agent (upload) or the partial file (download) stopped; the
// hashes agree at every step.
func TestCopyInterruptedAndResumed(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil, "files,journal")
	p := newProxy(t, a.url)
	u := newUser(t, "DECKHAND_AGENT_URL="+p.URL())
	local, sum := bigFile(t, u.home, bigSize)
	remoteDir := t.TempDir() // the agent runs as this user with files root /
	remote := filepath.Join(remoteDir, "up.bin")

	// Up: the proxy stalls the PATCH after 12 MB; the CLI is killed there.
	fired := p.arm(&fault{pathPrefix: uploads, request: true, after: stallAt, stall: true})
	kill := u.startKilled("cp", local, ":"+remote)
	waitOrFatal(t, fired, "the upload to reach 12 MB")
	kill()
	p.release()
	if _, err := os.Stat(remote); err == nil {
		t.Fatal("the target exists after an interrupted upload")
	}
	up := transferOf(t, u.ok("", "cp", local, ":"+remote, "-o", "json"))
	if up.ResumedFrom <= 0 || up.ResumedFrom >= bigSize || up.SHA256 != sum || up.Size != bigSize || up.Destination != ":"+remote {
		t.Fatalf("resumed upload: %+v", up)
	}
	if got := sha256File(t, remote); got != sum {
		t.Fatalf("uploaded file hashes to %s, want %s", got, sum)
	}

	// Down: the proxy stalls the answer after 12 MB.
	back := filepath.Join(u.home, "back.bin")
	fired = p.arm(&fault{pathPrefix: downloads, after: stallAt, stall: true})
	kill = u.startKilled("cp", ":"+remote, back)
	waitOrFatal(t, fired, "the download to reach 12 MB")
	waitFor(t, "the partial file", func() bool {
		fi, err := os.Stat(back + ".deckhand-part")
		return err == nil && fi.Size() > 0
	})
	kill()
	p.release()
	down := transferOf(t, u.ok("", "cp", ":"+remote, back, "-o", "json"))
	if down.ResumedFrom <= 0 || down.SHA256 != sum || down.Size != bigSize {
		t.Fatalf("resumed download: %+v", down)
	}
	if got := sha256File(t, back); got != sum {
		t.Fatalf("downloaded file hashes to %s, want %s", got, sum)
	}
	if _, err := os.Stat(back + ".deckhand-part"); err == nil {
		t.Fatal("the partial file is left behind")
	}
	ranged := false
	for _, r := range p.rangesSeen() {
		ranged = ranged || (strings.HasPrefix(r, "bytes=") && r != "bytes=0-")
	}
	if !ranged {
		t.Fatalf("the resumed download asked for no range: %v", p.rangesSeen())
	}
}

// A connection that breaks in the middle is resumed by the same run, both
// ways.
func TestCopyReconnects(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil, "files,journal")
	p := newProxy(t, a.url)
	u := newUser(t, "DECKHAND_AGENT_URL="+p.URL())
	local, sum := bigFile(t, u.home, 20<<20)
	remote := filepath.Join(t.TempDir(), "up.bin")

	p.arm(&fault{pathPrefix: uploads, request: true, after: 5 << 20})
	up := transferOf(t, u.ok("", "cp", local, ":"+remote, "-o", "json"))
	if up.Reconnects < 1 || up.SHA256 != sum || sha256File(t, remote) != sum {
		t.Fatalf("upload over a broken connection: %+v", up)
	}
	back := filepath.Join(u.home, "back.bin")
	p.arm(&fault{pathPrefix: downloads, after: 5 << 20})
	down := transferOf(t, u.ok("", "cp", ":"+remote, back, "-o", "json"))
	if down.Reconnects < 1 || down.SHA256 != sum || sha256File(t, back) != sum {
		t.Fatalf("download over a broken connection: %+v", down)
	}
}

// ls, mkdir, rm and a copy inside the container; errors carry the
// service's message; a progress bar only on a terminal.
func TestFileCommands(t *testing.T) {
	t.Parallel()
	a := startAgent(t, nil, "files,journal")
	u := newUser(t, "DECKHAND_AGENT_URL="+a.url)
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")

	if out := u.ok("", "mkdir", ":"+sub); !strings.Contains(out, "made :"+sub) {
		t.Fatalf("mkdir said %q", out)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir made nothing: %v", err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x.txt"), []byte("hello"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, ".hidden"), []byte("h"), 0o600); err != nil {
		t.Fatal(err)
	}
	ls := u.ok("", "ls", ":"+sub, "-o", "json")
	if jq(t, `[.entries[].name] | join(",")`, ls) != "x.txt" || jq(t, `.entries[0].size`, ls) != "5" {
		t.Fatalf("ls -o json: %s", ls)
	}
	if jq(t, `[.entries[].name] | join(",")`, u.ok("", "ls", "-a", ":"+sub, "-o", "json")) != ".hidden,x.txt" {
		t.Fatal("ls -a leaves out the hidden file")
	}
	if tbl := u.ok("", "ls", ":"+sub); !strings.Contains(tbl, "NAME") || !strings.Contains(tbl, "-rw-r-----") || !strings.Contains(tbl, "x.txt") {
		t.Fatalf("ls table: %s", tbl)
	}
	u.ok("", "cp", ":"+filepath.Join(sub, "x.txt"), ":"+filepath.Join(dir, "y.txt"))
	if b, _ := os.ReadFile(filepath.Join(dir, "y.txt")); string(b) != "hello" {
		t.Fatalf("copy inside the container: %q", b)
	}
	u.ok("", "cp", ":"+filepath.Join(sub, "x.txt"), ":"+dir+"/")
	if b, _ := os.ReadFile(filepath.Join(dir, "x.txt")); string(b) != "hello" {
		t.Fatalf("copy into a directory inside the container: %q", b)
	}
	u.fails("not empty", "rm", ":"+filepath.Join(dir, "a"))
	u.ok("", "rm", "-r", ":"+filepath.Join(dir, "a"))
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Fatal("rm -r left the directory")
	}
	u.fails("not found", "ls", ":"+filepath.Join(dir, "a"))
	u.fails("neither side", "cp", "a", "b")
	u.ok("", "rm", "-f", ":"+filepath.Join(dir, "a"))

	// In a pipe: no bar on stderr.
	local, _ := bigFile(t, u.home, 4<<20)
	r := u.run("", "cp", local, ":"+filepath.Join(dir, "pipe.bin"))
	if r.err != nil || r.stderr != "" {
		t.Fatalf("cp in a pipe: %s", r)
	}
	// On a terminal: a bar that reaches the file's size.
	cmd := exec.Command(bin, "cp", local, ":"+filepath.Join(dir, "tty.bin"))
	cmd.Env = u.env
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	screen, _ := io.ReadAll(bufio.NewReader(tty)) // EIO once the child is gone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cp on a terminal: %v\n%s", err, screen)
	}
	if !strings.Contains(string(screen), "100%") || !strings.Contains(string(screen), "4.2 MB") {
		t.Fatalf("no progress bar on the terminal:\n%q", screen)
	}
}

// logs prints the journal and -f follows it, one JSON line per entry.
func TestLogs(t *testing.T) {
	t.Parallel()
	crontab := filepath.Join(t.TempDir(), "crontab")
	a := startAgent(t, []string{"DECKHAND_CRONTAB=" + crontab, "DECKHAND_CRON_RUNNER=false"}, "cron,files,journal")
	u := newUser(t, "DECKHAND_AGENT_URL="+a.url)
	cronURL := a.url + "/_/cron/api/v1/cron/entries"
	var entry map[string]any
	post(t, cronURL, `{"schedule":"0 3 * * *","command":"echo out-$((40+2))"}`, &entry)
	id := entry["id"].(string)

	cmd := exec.Command(bin, "logs", "-f", "--source", "cron", "-o", "json")
	cmd.Env = u.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	post(t, cronURL+"/"+id+"/run", "", nil)
	select {
	case line := <-lines:
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["source"] != "cron" || !strings.Contains(line, "out-42") {
			t.Fatalf("followed %q", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cron run never reached logs -f")
	}
	out := u.ok("", "logs", "--source", "cron")
	if !strings.Contains(out, " cron ") || len(strings.Split(strings.TrimSpace(out), "\n")) != 1 {
		t.Fatalf("logs table: %q", out)
	}
	u.fails("level", "logs", "--level", "loud")
}
