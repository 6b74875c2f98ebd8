// Package runtimetest is the conformance suite every runtime driver
// passes (Docker, Podman's socket, Kubernetes), and the engine helpers
// its tests share: the suite's busybox image, a private Podman service,
// and cleanup of an installation's engine objects by label.
package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/runtime"
)

// Target is one engine under the suite.
type Target struct {
	// New answers a driver for the named installation; the suite passes
	// a fresh name to each, and closes the driver. New removes the
	// installation's engine objects when the test ends.
	New func(t *testing.T, installation string) runtime.Driver
	// Unreachable answers a driver whose engine does not answer.
	Unreachable func(t *testing.T) runtime.Driver
	// Image is the suite's image in this engine (ImageTar, with
	// Entrypoint as its entrypoint).
	Image string
	// Leftovers names the engine objects (containers, volumes) of the
	// installation, and of container id when it is not empty.
	Leftovers func(ctx context.Context, installation, id string) ([]string, error)
	// ArchiveDropsOwners: the engine's archive of a container's files
	// names root as every file's owner (Podman's socket), so a
	// snapshot's workspace files are root's.
	ArchiveDropsOwners bool
}

// TokenPath is where the suite's containers get their secret file.
const TokenPath = "/run/deckhand/agent-token"

// Run runs the conformance suite against target.
func Run(t *testing.T, target Target) {
	s := &suite{target: target}
	t.Run("Lifecycle", s.lifecycle)
	t.Run("Idempotent", s.idempotent)
	t.Run("SecretFile", s.secretFile)
	t.Run("Exit", s.exit)
	t.Run("Watch", s.watch)
	t.Run("MissingImage", s.missingImage)
	t.Run("Unreachable", s.unreachable)
	t.Run("Installations", s.installations)
	t.Run("Snapshot", s.snapshot)
	t.Run("Workspace", s.workspace)
	t.Run("Move", s.move)
}

type suite struct{ target Target }

func (s *suite) driver(t *testing.T) (runtime.Driver, string) {
	inst := "rt-" + RandomName()
	d := s.target.New(t, inst)
	t.Cleanup(func() { _ = d.Close() })
	return d, inst
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Spec answers the spec of a suite container.
func (s *suite) spec(id string) runtime.Spec {
	return runtime.Spec{
		ID: id, ProjectID: "prj-" + id, Name: "suite " + id, Image: s.target.Image,
		Resources: runtime.Resources{CPUs: 0.5, MemoryMB: 64},
		Env:       map[string]string{"SUITE_ENV": "from-spec"},
		Files:     []runtime.File{{Path: TokenPath, Content: []byte("agt_" + id + "-secret"), Mode: 0o400}},
		Args:      Args(),
	}
}

// WaitState polls Inspect until the container is in state, and answers
// its status.
func WaitState(t testing.TB, d runtime.Driver, id string, state runtime.State) runtime.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var st runtime.Status
	var err error
	for time.Now().Before(deadline) {
		st, err = d.Inspect(context.Background(), id)
		if err == nil && st.State == state && (state != runtime.StateRunning || st.Addr != "") {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("container %s never became %s: last %+v, %v", id, state, st, err)
	return st
}

var httpClient = &http.Client{Timeout: 3 * time.Second}

// WaitHTTP polls http://addr/ until it answers "ok".
func WaitHTTP(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := httpClient.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == "ok\n" {
				return
			}
			last = fmt.Sprintf("%d %q", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("http://%s/ never answered ok: %s", addr, last)
}

// Shell runs script inside the container through its CGI script and
// answers what it printed. It waits for the container's HTTP server first:
// the engine says running before the server listens.
func Shell(t testing.TB, addr, script string) string {
	t.Helper()
	WaitHTTP(t, addr)
	resp, err := httpClient.Post("http://"+addr+"/cgi-bin/sh", "text/plain", strings.NewReader(script+"\n"))
	if err != nil {
		t.Fatalf("shell in %s: %v", addr, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("shell in %s: %d %s", addr, resp.StatusCode, b)
	}
	return strings.TrimSpace(string(b))
}

func (s *suite) running(t *testing.T, d runtime.Driver, id string) string {
	t.Helper()
	st := WaitState(t, d, id, runtime.StateRunning)
	WaitHTTP(t, st.Addr)
	return st.Addr
}

// up creates spec's container, starts it and answers its address once
// it serves.
func (s *suite) up(ctx context.Context, t *testing.T, d runtime.Driver, spec runtime.Spec) string {
	t.Helper()
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("create %s: %v", spec.ID, err)
	}
	if err := d.Start(ctx, spec.ID); err != nil {
		t.Fatalf("start %s: %v", spec.ID, err)
	}
	return s.running(t, d, spec.ID)
}

func (s *suite) noLeftovers(t *testing.T, inst, id string) {
	t.Helper()
	left, err := s.target.Leftovers(context.Background(), inst, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("engine objects left of %s/%s: %v", inst, id, left)
	}
}

func (s *suite) lifecycle(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	id := "life-" + RandomName()
	if err := d.Create(ctx, s.spec(id)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if st, err := d.Inspect(ctx, id); err != nil || st.State != runtime.StateCreated || st.Addr != "" {
		t.Fatalf("after create: %+v, %v", st, err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatalf("start: %v", err)
	}
	addr := s.running(t, d, id)
	st, _ := d.Inspect(ctx, id)
	if st.StartedAt.IsZero() {
		t.Errorf("a running container has no start time: %+v", st)
	}
	list, err := d.List(ctx)
	if err != nil || list[id].State != runtime.StateRunning || list[id].Addr != addr {
		t.Fatalf("list: %+v, %v (want %s running at %s)", list, err, id, addr)
	}

	// What the spec asked for reaches the process.
	if got := Shell(t, addr, `echo "$SUITE_ENV"`); got != "from-spec" {
		t.Errorf("the spec's env in the container: %q", got)
	}
	mem := Shell(t, addr, `cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes`)
	if mem != strconv.Itoa(64<<20) {
		t.Errorf("memory limit in the container: %q, want %d", mem, 64<<20)
	}
	// The agent keeps NET_ADMIN (bit 12) for its egress rules and loses
	// NET_RAW (bit 13).
	capHex := Shell(t, addr, `grep CapBnd /proc/1/status | awk '{print $2}'`)
	caps, err := strconv.ParseUint(capHex, 16, 64)
	if err != nil || caps&(1<<12) == 0 || caps&(1<<13) != 0 {
		t.Errorf("PID 1's bounding set %q: want NET_ADMIN and no NET_RAW", capHex)
	}
	// The workspace is the image user's home, seeded from the image.
	if got := Shell(t, addr, `stat -c '%u' /home/user; cat /home/user/.profile`); got != "1000\n# from the image" {
		t.Errorf("the home volume: %q", got)
	}

	// Files in the workspace survive stop and start.
	Shell(t, addr, `echo kept > /home/user/kept.txt`)
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if st, err := d.Inspect(ctx, id); err != nil || st.State != runtime.StateExited || st.Addr != "" {
		t.Fatalf("after stop: %+v, %v", st, err)
	}
	if list, err := d.List(ctx); err != nil || list[id].State != runtime.StateExited {
		t.Fatalf("list after stop: %+v, %v", list, err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatalf("start again: %v", err)
	}
	addr = s.running(t, d, id)
	if got := Shell(t, addr, `cat /home/user/kept.txt`); got != "kept" {
		t.Fatalf("the workspace after stop/start: %q", got)
	}

	// Paused, it answers nothing; resumed, it answers again. A driver
	// without a freezer says so.
	if !d.Capabilities().Pause {
		if err := d.Pause(ctx, id); !errors.Is(err, runtime.ErrNotSupported) {
			t.Fatalf("pause on a driver without pause: %v, want ErrNotSupported", err)
		}
	} else {
		if err := d.Pause(ctx, id); err != nil {
			t.Fatalf("pause: %v", err)
		}
		if st, err := d.Inspect(ctx, id); err != nil || st.State != runtime.StatePaused {
			t.Fatalf("after pause: %+v, %v", st, err)
		}
		quick := &http.Client{Timeout: 500 * time.Millisecond}
		if resp, err := quick.Get("http://" + addr + "/"); err == nil {
			_ = resp.Body.Close()
			t.Fatalf("a paused container answered HTTP %d", resp.StatusCode)
		}
		if err := d.Resume(ctx, id); err != nil {
			t.Fatalf("resume: %v", err)
		}
		addr = s.running(t, d, id)
	}

	// Restart gives a new process with the workspace kept.
	before := Shell(t, addr, `awk '{print $22}' /proc/1/stat`)
	startedAt := st.StartedAt
	time.Sleep(1100 * time.Millisecond)
	if err := d.Restart(ctx, id, time.Second); err != nil {
		t.Fatalf("restart: %v", err)
	}
	addr = s.running(t, d, id)
	if after := Shell(t, addr, `awk '{print $22}' /proc/1/stat`); after == before {
		t.Errorf("restart kept the same PID 1 (%s)", after)
	}
	if st, _ := d.Inspect(ctx, id); !st.StartedAt.After(startedAt) {
		t.Errorf("restart did not move the start time: %v, was %v", st.StartedAt, startedAt)
	}
	if got := Shell(t, addr, `cat /home/user/kept.txt`); got != "kept" {
		t.Fatalf("the workspace after restart: %q", got)
	}

	// Delete leaves nothing of it.
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if st, err := d.Inspect(ctx, id); err != nil || st.State != runtime.StateMissing {
		t.Fatalf("after delete: %+v, %v", st, err)
	}
	if list, err := d.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("list after delete: %+v, %v", list, err)
	}
	s.noLeftovers(t, inst, "")
}

func (s *suite) idempotent(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	id := "idem-" + RandomName()
	spec := s.spec(id)
	twice := func(what string, call func() error) {
		t.Helper()
		for i := range 2 {
			if err := call(); err != nil {
				t.Fatalf("%s #%d: %v", what, i+1, err)
			}
		}
	}
	twice("create", func() error { return d.Create(ctx, spec) })
	twice("start", func() error { return d.Start(ctx, id) })
	addr := s.running(t, d, id)
	// A create of a running container succeeds and writes its files
	// again (a new token after a control-plane crash reaches the agent).
	spec.Files[0].Content = []byte("agt_rotated")
	if err := d.Create(ctx, spec); err != nil {
		t.Fatalf("create of a running container: %v", err)
	}
	// (A driver that must make the container again to place the file
	// may give it a new address.)
	addr = s.running(t, d, id)
	if got := Shell(t, addr, "cat "+TokenPath); got != "agt_rotated" {
		t.Errorf("the file after a second create: %q", got)
	}
	pauses := d.Capabilities().Pause
	if pauses {
		twice("pause", func() error { return d.Pause(ctx, id) })
		twice("resume", func() error { return d.Resume(ctx, id) })
	}
	twice("stop", func() error { return d.Stop(ctx, id, time.Second) })
	// Restart of a stopped container starts it.
	if err := d.Restart(ctx, id, time.Second); err != nil {
		t.Fatalf("restart of a stopped container: %v", err)
	}
	s.running(t, d, id)
	// A container made but never started is deleted too.
	other := "idem2-" + RandomName()
	if err := d.Create(ctx, s.spec(other)); err != nil {
		t.Fatal(err)
	}
	for _, x := range []string{id, other} {
		twice("delete "+x, func() error { return d.Delete(ctx, x, false) })
	}
	if err := d.Delete(ctx, "never-"+RandomName(), false); err != nil {
		t.Fatalf("delete of an id never made: %v", err)
	}
	// Calls that need the container say it is missing.
	for name, call := range map[string]func() error{
		"start":   func() error { return d.Start(ctx, id) },
		"stop":    func() error { return d.Stop(ctx, id, time.Second) },
		"restart": func() error { return d.Restart(ctx, id, time.Second) },
		"pause":   func() error { return d.Pause(ctx, id) },
		"resume":  func() error { return d.Resume(ctx, id) },
	} {
		if err := call(); !errors.Is(err, runtime.ErrNotFound) && !(!pauses && (name == "pause" || name == "resume") && errors.Is(err, runtime.ErrNotSupported)) {
			t.Errorf("%s of a deleted container: %v, want ErrNotFound", name, err)
		}
	}
	s.noLeftovers(t, inst, "")
}

func (s *suite) secretFile(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	id := "tok-" + RandomName()
	spec := s.spec(id)
	addr := s.up(ctx, t, d, spec)
	if got := Shell(t, addr, "stat -c '%a %u %g' "+TokenPath+"; cat "+TokenPath); got != "400 0 0\n"+string(spec.Files[0].Content) {
		t.Errorf("the secret file: %q, want mode 400 owned by root", got)
	}
	// The image's user cannot read it.
	out := Shell(t, addr, "su -s /bin/sh user -c 'cat "+TokenPath+"'; echo status=$?")
	if strings.Contains(out, string(spec.Files[0].Content)) || strings.HasSuffix(out, "status=0") {
		t.Errorf("uid 1000 read the secret file: %q", out)
	}
	if got := Shell(t, addr, "su -s /bin/sh user -c 'id -u'"); got != "1000" {
		t.Fatalf("su did not drop to uid 1000 (%q): the check above proves nothing", got)
	}
	st, _ := d.Inspect(ctx, id)
	if strings.Contains(fmt.Sprintf("%+v", st), "agt_") {
		t.Errorf("the status carries the secret: %+v", st)
	}
	// Delete keeping the workspace keeps its volume only.
	if err := d.Delete(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	left, err := s.target.Leftovers(ctx, inst, id)
	if err != nil || len(left) != 1 || !strings.HasPrefix(left[0], "volume ") {
		t.Fatalf("after a delete keeping the workspace: %v, %v (want its volume alone)", left, err)
	}
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	s.noLeftovers(t, inst, "")
}

func (s *suite) watch(t *testing.T) {
	d, _ := s.driver(t)
	other, _ := s.driver(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	events, err := d.Watch(ctx)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	id := "watch-" + RandomName()
	foreign := "watch-" + RandomName()
	for _, x := range []struct {
		d  runtime.Driver
		id string
	}{{other, foreign}, {d, id}} {
		if err := x.d.Create(ctx, s.spec(x.id)); err != nil {
			t.Fatal(err)
		}
		if err := x.d.Start(ctx, x.id); err != nil {
			t.Fatal(err)
		}
	}
	WaitState(t, d, id, runtime.StateRunning)
	if err := d.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, foreign, false); err != nil {
		t.Fatal(err)
	}
	want := []runtime.State{runtime.StateCreated, runtime.StateRunning, runtime.StateExited, runtime.StateMissing}
	var got []runtime.State
	timeout := time.After(30 * time.Second)
	for len(got) < len(want) || got[len(got)-1] != runtime.StateMissing {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the event stream closed early; got %v", got)
			}
			if ev.ContainerID != id {
				t.Fatalf("an event of a container not of this installation: %+v", ev)
			}
			if ev.State == runtime.StateExited && ev.Reason == "" {
				t.Errorf("an exit without its reason: %+v", ev)
			}
			if len(got) == 0 || got[len(got)-1] != ev.State {
				got = append(got, ev.State)
			}
		case <-timeout:
			t.Fatalf("events: got %v, want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
	cancel()
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event channel stayed open after its context ended")
	}
}

// exit: an agent that ends is reported exited with its exit code, with or
// without a restart policy (autostart), for the record's status_reason.
func (s *suite) exit(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	for _, autostart := range []bool{false, true} {
		id := "exit-" + RandomName()
		spec := s.spec(id)
		spec.Autostart = autostart
		// httpd refuses a port it cannot parse and exits 1.
		spec.Args = []string{"-p", "not-a-port"}
		if err := d.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx, id); err != nil && !autostart {
			t.Fatalf("start: %v", err)
		}
		if st := WaitState(t, d, id, runtime.StateExited); !strings.Contains(st.Reason, "exit code 1") || st.Addr != "" {
			t.Errorf("autostart %v: an agent that exits 1: %+v, want exited with its exit code", autostart, st)
		}
		if list, err := d.List(ctx); err != nil || list[id].State != runtime.StateExited {
			t.Errorf("autostart %v: list: %+v, %v", autostart, list[id], err)
		}
		if err := d.Delete(ctx, id, false); err != nil {
			t.Fatal(err)
		}
	}
	s.noLeftovers(t, inst, "")
}

func (s *suite) missingImage(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	spec := s.spec("noimg-" + RandomName())
	spec.Image = "deckhand-runtimetest/absent:" + RandomName()
	if err := d.Create(ctx, spec); !errors.Is(err, runtime.ErrImageMissing) {
		t.Fatalf("create with a missing image: %v, want ErrImageMissing", err)
	}
	if ok, err := d.ImageExists(ctx, spec.Image); ok || err != nil {
		t.Fatalf("ImageExists of a missing image: %v, %v", ok, err)
	}
	if ok, err := d.ImageExists(ctx, s.target.Image); !ok || err != nil {
		t.Fatalf("ImageExists of the suite's image: %v, %v", ok, err)
	}
	s.noLeftovers(t, inst, "")
}

func (s *suite) unreachable(t *testing.T) {
	d := s.target.Unreachable(t)
	t.Cleanup(func() { _ = d.Close() })
	ctx := ctxT(t)
	id := "down-" + RandomName()
	calls := map[string]func() error{
		"create":  func() error { return d.Create(ctx, s.spec(id)) },
		"start":   func() error { return d.Start(ctx, id) },
		"stop":    func() error { return d.Stop(ctx, id, time.Second) },
		"restart": func() error { return d.Restart(ctx, id, time.Second) },
		"pause":   func() error { return d.Pause(ctx, id) },
		"resume":  func() error { return d.Resume(ctx, id) },
		"delete":  func() error { return d.Delete(ctx, id, false) },
		"inspect": func() error { _, err := d.Inspect(ctx, id); return err },
		"list":    func() error { _, err := d.List(ctx); return err },
		"watch":   func() error { _, err := d.Watch(ctx); return err },
		"image":   func() error { _, err := d.ImageExists(ctx, s.target.Image); return err },
	}
	for name, call := range calls {
		if (name == "pause" || name == "resume") && !d.Capabilities().Pause {
			if err := call(); !errors.Is(err, runtime.ErrNotSupported) {
				t.Errorf("%s on a driver without pause: %v, want ErrNotSupported", name, err)
			}
			continue
		}
		if err := call(); !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("%s on an unreachable engine: %v, want ErrUnavailable", name, err)
		}
	}
}

func (s *suite) installations(t *testing.T) {
	a, instA := s.driver(t)
	b, instB := s.driver(t)
	ctx := ctxT(t)
	// One container id in two installations: two containers.
	id := "shared-" + RandomName()
	for _, d := range []runtime.Driver{a, b} {
		if err := d.Create(ctx, s.spec(id)); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	addrA := s.running(t, a, id)
	addrB := s.running(t, b, id)
	if addrA == addrB {
		t.Fatalf("two installations answered one address %s", addrA)
	}
	Shell(t, addrA, "echo a > /home/user/who")
	Shell(t, addrB, "echo b > /home/user/who")
	if got := Shell(t, addrA, "cat /home/user/who"); got != "a" {
		t.Fatalf("installation A's workspace holds %q: the installations share a volume", got)
	}
	onlyA := "only-a-" + RandomName()
	if err := a.Create(ctx, s.spec(onlyA)); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Inspect(ctx, onlyA); err != nil || st.State != runtime.StateMissing {
		t.Fatalf("B inspects A's container: %+v, %v", st, err)
	}
	if list, err := b.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("B lists %+v, %v: want its own container alone", list, err)
	}
	// B's deletes and stops never reach A's objects.
	if err := b.Delete(ctx, onlyA, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if st, err := a.Inspect(ctx, id); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("A's container after B deleted its own of the same id: %+v, %v", st, err)
	}
	if st, err := a.Inspect(ctx, onlyA); err != nil || st.State != runtime.StateCreated {
		t.Fatalf("A's container after B deleted that id: %+v, %v", st, err)
	}
	if got := Shell(t, addrA, "cat /home/user/who"); got != "a" {
		t.Fatalf("A's workspace after B's delete: %q", got)
	}
	s.noLeftovers(t, instB, "")
	for _, x := range []string{id, onlyA} {
		if err := a.Delete(ctx, x, false); err != nil {
			t.Fatal(err)
		}
	}
	s.noLeftovers(t, instA, "")
}
