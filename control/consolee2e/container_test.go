package consolee2e_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"deckhand/control/controltest"
	"deckhand/control/runtime"
	"deckhand/control/runtime/runtimetest"
	"deckhand/platform/platformtest"
)

// TestConsoleContainer runs a container on the real Docker engine from
// the console in Chromium: a project's manager creates it, sees it
// running with its service URLs and terminal link, stops and starts,
// pauses and resumes it, takes a snapshot, forks it and deletes the
// snapshot, the fork and the container; a viewer of the project sees the
// page and no action. The server's events and the engine (by label) are
// checked afterwards: nothing of the project is left. It runs on the
// embedded store only: the lifecycle on both engines is the containers
// suite's (control/containerse2e); here the page is what is tested.
func TestConsoleContainer(t *testing.T) {
	if controltest.OnPostgres() {
		t.Skip("the console's container page runs on the embedded store (see the comment)")
	}
	host := runtimetest.DockerHost(t)
	agent, cleanup, err := platformtest.Binary("deckhand", "deckhand/agent/cmd/deckhand")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	// Cleanups run last first: the installation's objects go before the
	// image they run.
	ref := runtimetest.AgentImage(t, host, "deckhand-consolee2e/agent", agent, `["/usr/local/bin/deckhand"]`)
	s := controltest.Start(t, "--docker-host", host, "--enroll-timeout", "60s")
	admin := s.Admin()
	project := controltest.Data(s.MustDo(201, "POST", "/api/v1/projects", map[string]any{"name": "console run"}, admin))["id"].(string)
	alias := "agent-" + runtimetest.RandomName()
	s.MustDo(201, "POST", "/api/v1/admin/images", map[string]any{"alias": alias, "image_name": ref, "architecture": "amd64", "os": "busybox"}, admin)
	for email, role := range map[string]string{"manager@example.com": "manager", "viewer@example.com": "viewer"} {
		uid, _ := s.User(admin, email)
		s.MustDo(201, "POST", "/api/v1/projects/"+project+"/permissions", map[string]any{"user_id": uid, "role": role}, admin)
	}

	inst := watchInstallation(t, host, project)
	out := runConsole(t, "container", map[string]any{"url": s.URL, "project": project, "imageAlias": alias,
		"managerEmail": "manager@example.com", "viewerEmail": "viewer@example.com", "password": controltest.GoodPW,
		"outDir": artifacts(t, "container")})
	id, fork := line(t, out, "CONTAINER"), line(t, out, "FORK")
	for _, l := range []string{"RUNNING", "TERMINAL", "URLS", "SNAPSHOT", "REFUSED", "VIEWER"} {
		t.Log(l, line(t, out, l))
	}

	// The page's clicks are the server's events, of the right containers.
	kinds := func(container string) string {
		r := s.MustDo(200, "GET", "/api/v1/events?container_id="+container+"&sort_order=asc&limit=500", nil, admin)
		var out []string
		for _, e := range controltest.Data(r)["events"].([]any) {
			out = append(out, strings.TrimPrefix(e.(map[string]any)["event_type"].(string), "container."))
		}
		return strings.Join(out, ",")
	}
	want := "creating,running,stopped,running,paused,running,snapshot.created,snapshot.deleted,deleting"
	if got := kinds(id); !inOrder(got, want) {
		t.Fatalf("events of the container: %s, want in order %s", got, want)
	}
	if got := kinds(fork); !inOrder(got, "creating,running,deleting") {
		t.Fatalf("events of the fork: %s", got)
	}
	for _, c := range []string{id, fork} {
		s.MustDo(404, "GET", "/api/v1/containers/"+c, nil, admin)
	}
	// Nothing of the installation is left in the engine: containers,
	// volumes, the snapshot's image.
	installation := inst()
	if installation == "" {
		t.Fatal("the engine never showed a container of the project")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if left, err := runtimetest.Leftovers(ctx, host, installation, ""); err != nil || len(left) > 0 {
		t.Fatalf("left in the engine after the console's deletes: %v %v", left, err)
	}
}

// inOrder reports whether the comma list want appears in got in order
// (other kinds may come between).
func inOrder(got, want string) bool {
	i := 0
	ws := strings.Split(want, ",")
	for _, g := range strings.Split(got, ",") {
		if i < len(ws) && g == ws[i] {
			i++
		}
	}
	return i == len(ws)
}

// watchInstallation learns, from the first engine container of project,
// the installation of the control plane that made it (its store keeps
// the id; the engine's labels show it), and purges that installation when
// the test ends. It answers a function that says what it learnt.
func watchInstallation(t *testing.T, host, project string) func() string {
	t.Helper()
	cli := runtimetest.Client(t, host)
	var (
		mu   sync.Mutex
		inst string
	)
	get := func() string {
		mu.Lock()
		defer mu.Unlock()
		return inst
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := client.Filters{}.Add("label", runtime.LabelProject+"="+project)
		for ctx.Err() == nil {
			cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
			if err == nil && len(cs.Items) > 0 {
				mu.Lock()
				inst = cs.Items[0].Labels[runtime.LabelInstallation]
				mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if i := get(); i != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := runtimetest.Purge(ctx, host, i); err != nil {
				t.Errorf("purge installation %s: %v", i, err)
			}
		}
	})
	return get
}
