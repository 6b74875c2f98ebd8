package platformtest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
)

// Binary finds the binary name for an end-to-end test: $DECKHAND_BIN/name
// when `make test` built it, else it builds pkg (an import path such as
// "deckhand/control/cmd/deckhand-control") with CGO_ENABLED=0 into a
// temporary directory that cleanup removes. It takes no testing.T because
// TestMain calls it.
func Binary(name, pkg string) (path string, cleanup func(), err error) {
	if d := os.Getenv("DECKHAND_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name), func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", name+"-e2e-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", path, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build %s: %v\n%s", name, err, out)
	}
	return path, cleanup, nil
}

// Main is TestMain for a package that drives one binary: it finds or
// builds it with Binary, stores its path in *path, runs check (if any) on
// it, runs the tests and removes what it built.
func Main(m *testing.M, path *string, name, pkg string, check ...func(path string) error) {
	os.Exit(func() int {
		bin, cleanup, err := Binary(name, pkg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		for _, c := range check {
			if err := c(bin); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		*path = bin
		defer StopPostgres() // if a test started the shared server
		return m.Run()
	}())
}

// listening matches the line a deckhand binary prints once it serves.
var listening = regexp.MustCompile(`listening on (http://[0-9.:\[\]]+)`)

// WatchListening reads a child's output r line by line, copying each line
// to tee when it is not nil, and returns a channel that receives the first
// base URL a "listening on http://…" line announces. end, when not nil,
// runs once r is exhausted.
func WatchListening(r io.Reader, tee io.Writer, end func()) <-chan string {
	found := make(chan string, 1)
	go func() {
		sent := false
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			if tee != nil {
				_, _ = tee.Write([]byte(line + "\n"))
			}
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if end != nil {
			end()
		}
	}()
	return found
}

// portMu guards given: the ranges this process has handed out. A range is
// free when checked, but its ports are bound only later (an isolated
// child's, seconds later), so a parallel test must never be handed an
// overlapping range.
var (
	portMu sync.Mutex
	given  [][2]int
)

// Port ranges come from below Linux's ephemeral range (32768-60999), where
// no outgoing connection of another test can be holding them.
const portLow, portHigh = 10000, 32768

// FreePortBase finds a port base such that base … base+span on 127.0.0.1
// are all free right now (the agent's gateway port and its service ports)
// and overlap no range handed to another test of this process.
func FreePortBase(t testing.TB, span int) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	for range 500 {
		base := portLow + rand.IntN(portHigh-portLow-span)
		ok := true
		for _, g := range given {
			if base <= g[1] && g[0] <= base+span {
				ok = false
				break
			}
		}
		for off := 0; off <= span && ok; off++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			given = append(given, [2]int{base, base + span})
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// BrowserTools finds node, Debian's Chromium and playwright-core under
// dir (scripts/e2e, relative to the calling test's package), or skips the
// test saying what to install. It returns node, chromium and dir made
// absolute.
func BrowserTools(t testing.TB, dir string) (node, chromium, abs string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("browser test skipped: node is not installed")
	}
	chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("browser test skipped: /usr/bin/chromium is not installed (apt-get install chromium)")
	}
	abs, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(abs, "node_modules", "playwright-core")); err != nil {
		t.Skip("browser test skipped: run `npm ci --prefix scripts/e2e` to install playwright-core")
	}
	return node, chromium, abs
}
