// Package clie2e drives the deckhand client commands as a user does: the
// real `deckhand` binary against a real `deckhand-control serve` and a real
// `deckhand run`, with a test proxy in between where a test needs the
// network to misbehave (an altered answer, a connection that stalls or
// breaks mid-transfer).
package clie2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
)

var bin string // the deckhand binary under test

// TestMain uses $DECKHAND_BIN's binaries when `make test` built them, else
// builds both; the control plane runs on the embedded store (the CLI sees
// the same HTTP either way, and controltest's PostgreSQL runs cover the
// store).
func TestMain(m *testing.M) {
	os.Exit(func() int {
		path, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		bin = path
		return controltest.RunOnce(m)
	}())
}

// user is one person at a terminal: a config file of their own.
type user struct {
	t    testing.TB
	home string
	env  []string
}

func newUser(t testing.TB, env ...string) *user {
	home := t.TempDir()
	return &user{t: t, home: home, env: append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"DECKHAND_CONFIG=" + filepath.Join(home, "cfg", "config.json"),
	}, env...)}
}

func (u *user) configPath() string { return filepath.Join(u.home, "cfg", "config.json") }

// result is one finished command.
type result struct {
	stdout, stderr string
	err            error
}

func (r result) String() string {
	return fmt.Sprintf("exit %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// run runs deckhand with args, stdin from in, and waits for it (a
// minute at most: a hang guard, not a timing).
func (u *user) run(in string, args ...string) result {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = u.env
	cmd.Dir = u.home
	cmd.Stdin = strings.NewReader(in)
	// Its own session: no controlling terminal, as in a pipeline.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		u.t.Fatalf("deckhand %v did not finish:\n%s", args, e.String())
	}
	return result{o.String(), e.String(), err}
}

// ok runs a command that must succeed.
func (u *user) ok(in string, args ...string) string {
	u.t.Helper()
	r := u.run(in, args...)
	if r.err != nil {
		u.t.Fatalf("deckhand %v: %s", args, r)
	}
	return r.stdout
}

// fails runs a command that must fail and says so on stderr with want.
func (u *user) fails(want string, args ...string) result {
	u.t.Helper()
	r := u.run("", args...)
	var exit *exec.ExitError
	if r.err == nil || !errorAs(r.err, &exit) || exit.ExitCode() == 0 {
		u.t.Fatalf("deckhand %v should fail: %s", args, r)
	}
	if !strings.Contains(r.stderr, want) {
		u.t.Fatalf("deckhand %v: stderr lacks %q: %s", args, want, r)
	}
	return r
}

func errorAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// jsonOf runs a command with -o json and decodes its stdout.
func (u *user) jsonOf(args ...string) map[string]any {
	u.t.Helper()
	out := u.ok("", append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		u.t.Fatalf("deckhand %v -o json is not a JSON object: %v\n%s", args, err, out)
	}
	return m
}

// jq runs jq on input and answers its raw output.
func jq(t testing.TB, filter, input string) string {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq is needed (apt-get install jq)")
	}
	cmd := exec.Command("jq", "-er", filter)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jq %s: %v\n%s\ninput:\n%s", filter, err, out, input)
	}
	return strings.TrimSpace(string(out))
}

// login logs email in through the CLI with the password on stdin.
func (u *user) login(url, email, password string, extra ...string) string {
	u.t.Helper()
	return u.ok(password+"\n", append([]string{"login", url, "--email", email, "--password-stdin"}, extra...)...)
}

// agentProc is one `deckhand run`.
type agentProc struct {
	cmd  *exec.Cmd
	url  string
	data string
	out  *platformtest.SyncBuffer
	done chan struct{}
}

// startAgent runs `deckhand run` with services on a free port range, as
// root would (files root /), and waits until its gateway answers.
func startAgent(t testing.TB, env []string, services string) *agentProc {
	t.Helper()
attempts:
	for attempt := 0; ; attempt++ {
		base := platformtest.FreePortBase(t, 17)
		data := t.TempDir()
		gw := "127.0.0.1:" + strconv.Itoa(base)
		a := &agentProc{url: "http://" + gw, data: data, out: &platformtest.SyncBuffer{}, done: make(chan struct{})}
		a.cmd = exec.Command(bin, "run", "--data", data, "--listen", gw, "--port-base", strconv.Itoa(base),
			"--services", services, "--log-level", "warn")
		a.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}, env...)
		a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
		a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = a.cmd.Wait(); close(a.done) }()
		t.Cleanup(func() { a.stop(t) })
		deadline := time.Now().Add(60 * time.Second) // hang guard
		for time.Now().Before(deadline) {
			select {
			case <-a.done:
				if attempt < 3 && strings.Contains(a.out.String(), "address already in use") {
					continue attempts
				}
				t.Fatalf("agent exited at start:\n%s", a.out)
			default:
			}
			if resp, err := http.Get(a.url + "/_agent/status"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return a
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("agent gateway never answered:\n%s", a.out)
	}
}

func (a *agentProc) stop(t testing.TB) {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.done
		t.Errorf("agent ignored SIGTERM:\n%s", a.out)
	}
}

// waitFor polls cond (a hang guard of a minute, not a timing).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitOrFatal(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("never saw %s", what)
	}
}

// post sends a JSON body and decodes a 2xx answer into out.
func post(t testing.TB, url, body string, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST %s: %v %s", url, err, raw)
		}
	}
}
