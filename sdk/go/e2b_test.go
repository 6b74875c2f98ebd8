package deckhand_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// sandboxes is the package's control plane that runs containers on the
// local engine (skipping when there is none), started at first use and
// stopped by TestMain.
func sandboxes(t *testing.T) *harness.Sandboxes {
	t.Helper()
	if _, err := harness.DockerEngine(); err != nil {
		t.Skipf("no container engine: %v", err)
	}
	sandboxOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deckhand-sdk-sandboxes-")
		if err != nil {
			sandboxErr = err
			return
		}
		sandboxDir = dir
		sandbox, sandboxErr = harness.StartSandboxes(bin, filepath.Join(dir, "control"))
	})
	if sandboxErr != nil {
		t.Fatal(sandboxErr)
	}
	return sandbox
}

// sandboxUser is sandboxes with a user email of its own, whose project it
// answers; a failed test shows the control plane's output.
func sandboxUser(t *testing.T, email string) (*harness.Sandboxes, string) {
	t.Helper()
	sb := sandboxes(t)
	project, err := sb.AddUser(email)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane output:\n%s", sb.Output())
		}
	})
	return sb, project
}

var (
	sandboxOnce sync.Once
	sandbox     *harness.Sandboxes
	sandboxErr  error
	sandboxDir  string
)

// stopSandboxes undoes sandboxes (TestMain).
func stopSandboxes() {
	if sandbox != nil {
		sandbox.Stop()
	}
	if sandboxDir != "" {
		os.RemoveAll(sandboxDir)
	}
}

// TestE2BStyleProgram is what a user's program does with the SDK alone:
// create a container from a catalog alias, wait for it, run a command,
// write and read a file, stream a long command's output across a forced
// disconnect, and delete it. The agent is reached through the platform
// proxy's per-service URLs the container's record carries.
func TestE2BStyleProgram(t *testing.T) {
	const email = "e2b@example.com"
	sb, project := sandboxUser(t, email)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// Between the SDK and the platform proxy: a link the test can cut.
	link := newProxy(t, sb.ProxyAddr)
	client, err := deckhand.New(sb.URL, deckhand.Options{ProxyAddr: hostOf(link.URL())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Login(ctx, email, harness.UserPass); err != nil {
		t.Fatal(err)
	}

	box, err := client.Containers.Create(ctx, sb.Alias, deckhand.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := box.WaitRunning(ctx)
	sb.Track(box.ID())
	if err != nil {
		t.Fatal(err)
	}
	if info.ProjectID != project || info.ImageID != sb.ImageID || info.AgentAddr == "" {
		t.Fatalf("the running record: %+v", info)
	}
	if got, want := box.URL("process"), info.URLs["process"]; got != want || !strings.Contains(got, "-"+box.ID()+"-process-1.") {
		t.Fatalf("URL(process) %q, the record's %q", got, want)
	}
	if got := box.URL("p8080"); !strings.Contains(got, "-"+box.ID()+"-p8080-1.") {
		t.Fatalf("URL(p8080) %q", got)
	}
	list, err := client.Containers.List(ctx, "")
	if err != nil || len(list) != 1 || list[0].ID != box.ID() {
		t.Fatalf("List: %v %+v", err, list)
	}

	// The handle mints an access token from the control plane by itself;
	// a token the control plane did not sign opens nothing.
	r, err := box.Process.Run(ctx, "echo", "hello", "from", "deckhand")
	if err != nil {
		t.Fatal(err)
	}
	var refused *deckhand.Error
	if _, err := box.WithToken("not-a-token").Process.Run(ctx, "true"); !errors.As(err, &refused) ||
		(refused.Status != http.StatusUnauthorized && refused.Status != http.StatusForbidden) {
		t.Fatalf("a token the control plane did not sign: %v", err)
	}
	if r.Stdout != "hello from deckhand\n" || r.ExitCode != 0 || r.State != "exited" {
		t.Fatalf("run: %+v", r)
	}
	r, err = box.Process.RunCommand(ctx, deckhand.Command{Shell: "echo oops >&2; exit 3"})
	if err != nil || r.ExitCode != 3 || r.Stderr != "oops\n" {
		t.Fatalf("a failing command: %v %+v", err, r)
	}

	// Files.
	if err := box.Files.Write(ctx, "/tmp/hello.txt", []byte("written by the sdk\n")); err != nil {
		t.Fatal(err)
	}
	got, err := box.Files.Read(ctx, "/tmp/hello.txt")
	if err != nil || string(got) != "written by the sdk\n" {
		t.Fatalf("read back: %v %q", err, got)
	}
	entries, err := box.Files.List(ctx, "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		found = found || (e.Name == "hello.txt" && e.Size == 19 && e.Type == "file")
	}
	if !found {
		t.Fatalf("List(/tmp): %+v", entries)
	}
	local := filepath.Join(t.TempDir(), "up.bin")
	if err := os.WriteFile(local, []byte(strings.Repeat("0123456789", 100_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := box.Files.Upload(ctx, local, "/tmp/up.bin")
	if err != nil || up.Size != 1_000_000 {
		t.Fatalf("upload: %v %+v", err, up)
	}
	back := filepath.Join(t.TempDir(), "down.bin")
	down, err := box.Files.Download(ctx, "/tmp/up.bin", back)
	if err != nil || down.SHA256 != up.SHA256 {
		t.Fatalf("download: %v %+v, uploaded %+v", err, down, up)
	}

	// A terminal, through the proxy too.
	term, err := box.Terminal(ctx, deckhand.TerminalOptions{Shell: "/bin/sh"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.Write([]byte("echo term-$((6*7)); exit 5\n")); err != nil {
		t.Fatal(err)
	}
	screen, err := io.ReadAll(term)
	term.Close()
	if err != nil || !strings.Contains(string(screen), "term-42") || term.ExitCode() == nil || *term.ExitCode() != 5 {
		t.Fatalf("terminal: %v %q exit %v", err, screen, term.ExitCode())
	}

	// A long command's output, streamed across a forced disconnect: every
	// line arrives once, in order.
	const lines = 60
	run, err := box.Process.StartCommand(ctx, deckhand.Command{Shell: fmt.Sprintf(
		"i=1; while [ $i -le %d ]; do echo line-$i; i=$((i+1)); sleep 0.05; done", lines)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	cut := false
	end, err := run.Stream(ctx, func(o deckhand.Output) error {
		mu.Lock()
		defer mu.Unlock()
		out.Write(o.Data)
		if !cut && strings.Count(out.String(), "\n") >= 10 {
			cut = true
			go link.cut()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	if out.String() != want.String() || end.ExitCode != 0 {
		t.Fatalf("streamed output (exit %d):\n%s", end.ExitCode, out.String())
	}
	if !cut || link.dialCount() < 2 {
		t.Fatalf("the stream was not cut and resumed (cut %v, %d connections)", cut, link.dialCount())
	}

	// Stop, start, delete.
	if st, err := client.Containers.Stop(ctx, box.ID()); err != nil || st.Status != "stopped" {
		t.Fatalf("stop: %v %+v", err, st)
	}
	if err := box.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = client.Containers.Get(ctx, box.ID())
	var de *deckhand.Error
	if !errors.As(err, &de) || de.Status != http.StatusNotFound {
		t.Fatalf("get after delete: %v", err)
	}
	for _, inst := range []string{sb.Engine.InstallationOf(box.ID())} {
		if inst != "" {
			t.Fatalf("the engine still holds container %s (installation %s)", box.ID(), inst)
		}
	}
}
