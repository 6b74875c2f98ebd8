package containerse2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"deckhand/control/runtime/runtimetest"
)

// count is how many of kinds are kind.
func count(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// TestSnapshots: a snapshot keeps a container's files and workspace;
// after changes, a restore puts them back; a fork of three from it has
// them, each with its own identity (its agent token does not open the
// source's routes); renames, the quota, bad input and another project's
// snapshot are refused before anything is written; deletes leave nothing
// in the engine; every event is written once.
func TestSnapshots(t *testing.T) {
	f := newFixture(t, "--max-snapshots-per-project", "2")
	src := f.create("src", nil)
	c := f.await(src, "running", 60*time.Second)
	a := f.openAgent(src, c)
	if _, errOut, code := a.run("", "echo one > /home/user/ws.txt && chown 1000 /home/user/ws.txt && mkdir -p /opt && echo pkg-one > /opt/pkg"); code != 0 {
		t.Fatalf("write files: %s", errOut)
	}
	base := "/api/v1/containers/" + src + "/snapshots"
	start := time.Now()
	sn := data(f.must(201, "POST", base, map[string]any{"name": "first"}, f.alice))
	t.Logf("snapshot: %s", time.Since(start).Round(time.Millisecond))
	sid, _ := sn["id"].(string)
	if sid == "" || sn["name"] != "first" || sn["container_id"] != src || sn["size_bytes"].(float64) <= 0 || sn["created_at"] == nil {
		t.Fatalf("snapshot answer: %v", sn)
	}
	// The container goes on running.
	if c := data(f.must(200, "GET", "/api/v1/containers/"+src, nil, f.alice)); c["status"] != "running" {
		t.Fatalf("after the snapshot: %v", c)
	}

	// Bad input, each naming its field.
	for _, bad := range []struct {
		status      int
		method, url string
		body        any
		field       string
	}{
		{400, "POST", base, map[string]any{"name": ""}, "name"},
		{409, "POST", base, map[string]any{"name": "FIRST"}, "name"},
		{404, "PATCH", base + "/nosuchsnapshot", map[string]any{"name": "x"}, "sid"},
		{400, "PATCH", base + "/NOT-AN-ID", map[string]any{"name": "x"}, "sid"},
		{404, "POST", base + "/nosuchsnapshot/restore", nil, "sid"},
		{404, "POST", "/api/v1/containers/nosuchcontainer/snapshots", map[string]any{"name": "x"}, "container"},
	} {
		r := f.s.Call(bad.method, bad.url, bad.body, f.alice)
		if r.Status != bad.status || !strings.Contains(string(r.Raw), bad.field) {
			t.Fatalf("%s %s %v: %d %s, want %d naming %s", bad.method, bad.url, bad.body, r.Status, r.Raw, bad.status, bad.field)
		}
	}
	if r := data(f.must(200, "PATCH", base+"/"+sid, map[string]any{"name": "renamed"}, f.alice)); r["name"] != "renamed" {
		t.Fatalf("rename: %v", r)
	}
	list := data(f.must(200, "GET", base, nil, f.alice))["snapshots"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != "renamed" {
		t.Fatalf("list: %v", list)
	}

	// Change, then restore: the files as at the snapshot.
	srcToken, _, _ := a.run("", "cat /run/deckhand/agent-token")
	a.run("", "echo two > /home/user/ws.txt; rm /opt/pkg")
	if r := data(f.must(200, "POST", base+"/"+sid+"/restore", nil, f.alice)); r["status"] != "creating" {
		t.Fatalf("restore: %v", r)
	}
	c = f.await(src, "running", 60*time.Second)
	a = f.openAgent(src, c)
	if out, _, _ := a.run("", "cat /home/user/ws.txt /opt/pkg; stat -c %u /home/user/ws.txt"); out != "one\npkg-one\n1000\n" {
		t.Fatalf("after restore: %q", out)
	}
	if tok, _, _ := a.run("", "cat /run/deckhand/agent-token"); tok == srcToken {
		t.Fatal("the restored container kept its old agent token")
	}
	srcToken, _, _ = a.run("", "cat /run/deckhand/agent-token")

	// Fork: count out of range, an unknown snapshot and another
	// project's are refused.
	fork := func(project string, extra map[string]any) resp {
		body := map[string]any{"project_id": project, "name": "fork", "snapshot_id": sid}
		for k, v := range extra {
			body[k] = v
		}
		return f.s.Call("POST", "/api/v1/containers", body, f.alice)
	}
	for _, n := range []int{0, 11} {
		if r := fork(f.project, map[string]any{"count": n}); r.Status != 400 || !strings.Contains(string(r.Raw), "count") {
			t.Fatalf("fork count %d: %d %s", n, r.Status, r.Raw)
		}
	}
	if r := fork(f.project, map[string]any{"snapshot_id": "nosuchsnapshot"}); r.Status != 404 || !strings.Contains(string(r.Raw), "snapshot_id") {
		t.Fatalf("fork of an unknown snapshot: %d %s", r.Status, r.Raw)
	}
	other := data(f.must(201, "POST", "/api/v1/projects", map[string]any{"name": "other"}, f.alice))["id"].(string)
	if r := fork(other, nil); r.Status != 404 || !strings.Contains(string(r.Raw), "snapshot_id") {
		t.Fatalf("fork of another project's snapshot: %d %s", r.Status, r.Raw)
	}
	start = time.Now()
	r := fork(f.project, map[string]any{"count": 3})
	if r.Status != 201 {
		t.Fatalf("fork ×3: %d %s", r.Status, r.Raw)
	}
	forks, _ := r.Body["data"].([]any)
	if len(forks) != 3 {
		t.Fatalf("fork ×3 answered %s", r.Raw)
	}
	var ids []string
	for i, x := range forks {
		fc := x.(map[string]any)
		if fc["status"] != "creating" || fc["name"] != "fork-"+string(rune('1'+i)) {
			t.Fatalf("fork %d: %v", i, fc)
		}
		ids = append(ids, fc["id"].(string))
	}
	for _, id := range ids {
		f.await(id, "running", 60*time.Second)
	}
	t.Logf("fork ×3 → all running: %s", time.Since(start).Round(time.Millisecond))
	tokens := map[string]bool{strings.TrimSpace(srcToken): true}
	for _, id := range ids {
		fa := f.openAgent(id, data(f.must(200, "GET", "/api/v1/containers/"+id, nil, f.alice)))
		if out, _, _ := fa.run("", "cat /home/user/ws.txt /opt/pkg"); out != "one\npkg-one\n" {
			t.Fatalf("fork %s: %q", id, out)
		}
		tok, _, _ := fa.run("", "cat /run/deckhand/agent-token")
		tok = strings.TrimSpace(tok)
		if !strings.HasPrefix(tok, "agt_") || tokens[tok] {
			t.Fatalf("fork %s's agent token is not its own: %q", id, tok)
		}
		tokens[tok] = true
		// Its token is good for its own agent routes, not the source's.
		if r := f.s.Call("GET", "/api/v1/containers/"+id+"/network", nil, tok); r.Status != 404 {
			t.Fatalf("a fork's token on its own network route: %d %s", r.Status, r.Raw)
		}
		if r := f.s.Call("GET", "/api/v1/containers/"+src+"/network", nil, tok); r.Status != 403 {
			t.Fatalf("a fork's token on the source's network route: %d %s", r.Status, r.Raw)
		}
	}

	// The quota: two snapshots in the project, the third refused.
	second := data(f.must(201, "POST", "/api/v1/containers/"+ids[0]+"/snapshots", map[string]any{"name": "second"}, f.alice))
	if r := f.s.Call("POST", base, map[string]any{"name": "third"}, f.alice); r.Status != 409 || !strings.Contains(string(r.Raw), "max-snapshots-per-project") {
		t.Fatalf("a snapshot past the quota: %d %s", r.Status, r.Raw)
	}
	// A snapshot containers run from: the record goes, the image stays
	// until the last of them goes; no fork is made of it any more.
	f.must(200, "DELETE", base+"/"+sid, nil, f.alice)
	f.must(404, "DELETE", base+"/"+sid, nil, f.alice)
	if r := fork(f.project, nil); r.Status != 404 {
		t.Fatalf("fork of a deleted snapshot: %d %s", r.Status, r.Raw)
	}
	cli := runtimetest.Client(t, f.host)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, sn["image_name"].(string)); err != nil {
		t.Fatalf("the image of a deleted snapshot containers run from: %v", err)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+ids[0]+"/snapshots/"+second["id"].(string), nil, f.alice)
	f.must(200, "DELETE", "/api/v1/containers/"+src, nil, f.alice)
	for _, id := range ids {
		f.must(200, "DELETE", "/api/v1/containers/"+id, nil, f.alice)
	}
	if left, err := runtimetest.Leftovers(ctx, f.host, f.inst, ""); err != nil || len(left) != 0 {
		t.Fatalf("the engine still holds %v (%v)", left, err)
	}
	kinds := f.events(src)
	for kind, want := range map[string]int{"container.snapshot.created": 1, "container.snapshot.renamed": 1,
		"container.snapshot.restored": 1, "container.snapshot.deleted": 1, "container.creating": 2, "container.running": 2} {
		if got := count(kinds, kind); got != want {
			t.Errorf("%s written %d times, want %d: %v", kind, got, want, kinds)
		}
	}
}

// TestKeptWorkspace: a workspace kept on delete is listed, mounted by a
// new container (one at a time), outlives that one's delete, and goes
// with its own delete, leaving nothing in the engine.
func TestKeptWorkspace(t *testing.T) {
	f := newFixture(t)
	first := f.create("first", nil)
	a := f.openAgent(first, f.await(first, "running", 60*time.Second))
	a.run("user", "echo kept > /home/user/kept.txt")
	f.must(200, "DELETE", "/api/v1/containers/"+first+"?keep_workspace=true", nil, f.alice)
	wsURL := "/api/v1/projects/" + f.project + "/workspaces"
	ws := data(f.must(200, "GET", wsURL, nil, f.alice))["workspaces"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["id"] != first || ws[0].(map[string]any)["name"] != "first" {
		t.Fatalf("workspaces after a delete keeping one: %v", ws)
	}
	second := f.create("second", map[string]any{"workspace_id": first})
	a = f.openAgent(second, f.await(second, "running", 60*time.Second))
	if out, _, _ := a.run("user", "cat /home/user/kept.txt"); out != "kept\n" {
		t.Fatalf("the kept workspace in a new container: %q", out)
	}
	for _, bad := range []struct {
		status int
		body   map[string]any
	}{
		{409, map[string]any{"workspace_id": first}},
		{404, map[string]any{"workspace_id": "nosuchworkspace"}},
		{400, map[string]any{"workspace_id": "NOT-AN-ID"}},
		{400, map[string]any{"workspace_id": first, "count": 2}},
	} {
		body := map[string]any{"project_id": f.project, "name": "third", "image_id": f.image}
		for k, v := range bad.body {
			body[k] = v
		}
		if r := f.s.Call("POST", "/api/v1/containers", body, f.alice); r.Status != bad.status || !strings.Contains(string(r.Raw), "workspace_id") {
			t.Fatalf("create with %v: %d %s, want %d naming workspace_id", bad.body, r.Status, r.Raw, bad.status)
		}
	}
	if r := f.s.Call("DELETE", wsURL+"/"+first, nil, f.alice); r.Status != 409 {
		t.Fatalf("delete of a mounted workspace: %d %s", r.Status, r.Raw)
	}
	f.must(200, "DELETE", "/api/v1/containers/"+second, nil, f.alice)
	ws = data(f.must(200, "GET", wsURL, nil, f.alice))["workspaces"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["container_id"] != nil {
		t.Fatalf("the workspace after its container's delete: %v", ws)
	}
	if r := f.s.Call("DELETE", "/api/v1/projects/"+f.project, nil, f.alice); r.Status != 409 || !strings.Contains(string(r.Raw), "workspace") {
		t.Fatalf("delete of a project with a kept workspace: %d %s", r.Status, r.Raw)
	}
	f.must(200, "DELETE", wsURL+"/"+first, nil, f.alice)
	f.must(404, "DELETE", wsURL+"/"+first, nil, f.alice)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if left, err := runtimetest.Leftovers(ctx, f.host, f.inst, ""); err != nil || len(left) != 0 {
		t.Fatalf("the engine still holds %v (%v)", left, err)
	}
}
