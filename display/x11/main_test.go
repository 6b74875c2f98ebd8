//go:build linux && cgo

package x11_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/display/api"
	"deckhand/display/desktop"
	"deckhand/display/input"
	"deckhand/display/x11"
	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
)

// The tests drive a real X server: scripts/xvfb.sh starts Xvfb (1920x1080),
// openbox and an xterm on a display of their own, and effects are checked
// with independent X tools (xdotool, xwininfo, xprop, xclip, xsel, import).

var (
	display  string // ":N" of the test desktop
	skipWhy  string
	baseURL  string
	driver   x11.Display
	service  *api.Service
	repoRoot string
	state    string // xvfb.sh state: logs of Xvfb, openbox, xterm
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	if _, err := exec.LookPath("Xvfb"); err != nil {
		skipWhy = "Xvfb is not installed (apt-get install xvfb openbox xterm xdotool xclip xsel imagemagick x11-utils)"
		return m.Run()
	}
	for _, tool := range []string{"xdotool", "xclip", "xsel", "import", "openbox", "xterm", "xwininfo", "xprop"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "display tests need %s (apt-get install xdotool xclip xsel imagemagick openbox xterm x11-utils)\n", tool)
			return 1
		}
	}
	var err error
	state, err = os.MkdirTemp("", "deckhand-xvfb-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)
	display = freeDisplay(71)
	stop, err := startX(state, display)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()

	driver, err = x11.Open(display, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open display:", err)
		return 1
	}
	defer driver.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	service = api.New(contract.ServiceDeps{Name: "display", Logger: quiet}, driver)
	defer service.Close() // its recordings, VNC servers and their directories
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "display"}, Logger: quiet,
		HealthStatus: service.HealthStatus},
		service.Routes())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go host.Serve(ln)
	defer host.Shutdown(context.Background())
	baseURL = "http://" + ln.Addr().String()
	return m.Run()
}

// freeDisplay finds a display number with no server from start on.
func freeDisplay(start int) string {
	for n := start; n < start+100; n++ {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n)); os.IsNotExist(err) {
			if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n)); os.IsNotExist(err) {
				return fmt.Sprintf(":%d", n)
			}
		}
	}
	return fmt.Sprintf(":%d", start)
}

// startX runs scripts/xvfb.sh and returns how to stop it.
func startX(state, disp string, env ...string) (func(), error) {
	cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "xvfb.sh"), "start", disp)
	cmd.Env = append(append(os.Environ(), "XVFB_STATE="+state), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("scripts/xvfb.sh %s: %v: %s", disp, err, out)
	}
	return func() {
		stop := exec.Command("bash", filepath.Join(repoRoot, "scripts", "xvfb.sh"), "stop", disp)
		stop.Env = append(os.Environ(), "XVFB_STATE="+state)
		_ = stop.Run()
	}, nil
}

func needX(t *testing.T) {
	t.Helper()
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
}

// xtool runs an X client against the test display.
func xtool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := xtry(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v (%s)", name, strings.Join(args, " "), err, out)
	}
	return out
}

// xtry runs an X client; for polling, where a failure means "not yet".
func xtry(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

type answer struct {
	status int
	body   []byte
	header http.Header
}

func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

func (a answer) errCode(t *testing.T) fault.ContainerError {
	t.Helper()
	var e fault.ContainerError
	a.decode(t, &e)
	return e
}

func call(t testing.TB, method, path string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			buf, _ := json.Marshal(b)
			rd = bytes.NewReader(buf)
		}
	}
	req, _ := http.NewRequest(method, baseURL+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: b, header: resp.Header}
}

func mustOK(t testing.TB, a answer, what string) {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("%s: status %d: %s", what, a.status, a.body)
	}
}

// eventually polls cond for up to 5 s (X clients act asynchronously).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			if dir := os.Getenv("DISPLAY_TEST_DEBUG"); dir != "" {
				a := call(t, "GET", "/api/v1/display/screenshots?cursor=true", nil)
				_ = os.WriteFile(filepath.Join(dir, "fail.png"), a.body, 0o644)
				w := call(t, "GET", "/api/v1/display/windows", nil)
				act, _ := xtry("xdotool", "getactivewindow")
				wm, _ := os.ReadFile(filepath.Join(state, display[1:], "openbox.log"))
				t.Logf("windows %s; xdotool active %q; openbox log: %s", w.body, act, wm)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startClient runs an X client (an xterm with a unique title) on the test
// display and returns its window.
func startXterm(t *testing.T, title string, extra ...string) (desktop.Window, *exec.Cmd) {
	t.Helper()
	args := append([]string{"-title", title, "-geometry", "80x24+300+300"}, extra...)
	cmd := exec.Command("xterm", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "LC_ALL=C.UTF-8")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	a := call(t, "POST", "/api/v1/display/input/wait", map[string]any{"until": "window", "name": "^" + title + "$", "timeout_ms": 10000})
	mustOK(t, a, "wait for xterm")
	var w input.WaitResult
	a.decode(t, &w)
	if !w.Met || w.Window == nil {
		t.Fatalf("xterm %q did not appear: %s", title, a.body)
	}
	// the window manager maps and places it asynchronously
	eventually(t, "xterm mapped", func() bool {
		return strings.Contains(xtool(t, "xwininfo", "-id", fmt.Sprint(w.Window.ID)), "IsViewable")
	})
	return *w.Window, cmd
}
