package deckhand_test

import (
	"context"
	"strings"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// TestStateVerbs drives the state verbs on the real engine with the SDK
// alone: pause and resume, a snapshot taken, listed, renamed, forked
// twice (each copy has the snapshot's file), restored over a change and
// deleted, a keep-alive lease, and a workspace kept on delete, listed and
// removed.
func TestStateVerbs(t *testing.T) {
	const email = "state@example.com"
	sb, project := sandboxUser(t, email)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := deckhand.New(sb.URL, deckhand.Options{ProxyAddr: sb.ProxyAddr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Login(ctx, email, harness.UserPass); err != nil {
		t.Fatal(err)
	}
	cs := client.Containers
	box, err := cs.Create(ctx, sb.Alias, deckhand.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = box.WaitRunning(ctx)
	sb.Track(box.ID())
	if err != nil {
		t.Fatal(err)
	}
	id := box.ID()

	if info, err := cs.Pause(ctx, id); err != nil || info.Status != "paused" {
		t.Fatalf("Pause: %v %+v", err, info)
	}
	if info, err := cs.Resume(ctx, id); err != nil || info.Status != "running" {
		t.Fatalf("Resume: %v %+v", err, info)
	}

	lease, err := box.Keepalive(ctx, time.Minute)
	if err != nil || !strings.HasPrefix(lease.ID, "lse_") || lease.Duration != time.Minute || lease.ExpiresAt.Sub(lease.CreatedAt) != time.Minute {
		t.Fatalf("Keepalive: %v %+v", err, lease)
	}
	if _, err := box.Keepalive(ctx, 0); err == nil {
		t.Fatal("Keepalive(0) was taken")
	}

	if err := box.Files.Write(ctx, "/home/user/state.txt", []byte("at the snapshot\n")); err != nil {
		t.Fatal(err)
	}
	snap, err := cs.Snapshot(ctx, id, "first")
	if err != nil || snap.Name != "first" || snap.ContainerID != id || snap.ProjectID != project || snap.ID == "" {
		t.Fatalf("Snapshot: %v %+v", err, snap)
	}
	if snap, err = cs.RenameSnapshot(ctx, id, snap.ID, "renamed"); err != nil || snap.Name != "renamed" {
		t.Fatalf("RenameSnapshot: %v %+v", err, snap)
	}
	list, err := cs.Snapshots(ctx, id)
	if err != nil || len(list) != 1 || list[0].ID != snap.ID || list[0].Name != "renamed" || list[0].SizeBytes <= 0 {
		t.Fatalf("Snapshots: %v %+v", err, list)
	}

	forks, err := cs.Fork(ctx, snap.ID, deckhand.ForkOptions{Name: "copy", Count: 2})
	if err != nil || len(forks) != 2 {
		t.Fatalf("Fork: %v %d", err, len(forks))
	}
	for i, fk := range forks {
		_, err := fk.WaitRunning(ctx)
		sb.Track(fk.ID())
		if err != nil {
			t.Fatal(err)
		}
		if fk.ID() == id || fk.Info().Name != "copy-"+string(rune('1'+i)) {
			t.Fatalf("fork %d: %+v", i, fk.Info())
		}
		if got, err := fk.Files.Read(ctx, "/home/user/state.txt"); err != nil || string(got) != "at the snapshot\n" {
			t.Fatalf("fork %d's file: %v %q", i, err, got)
		}
	}

	if err := box.Files.Write(ctx, "/home/user/state.txt", []byte("changed\n")); err != nil {
		t.Fatal(err)
	}
	if info, err := cs.Restore(ctx, id, snap.ID); err != nil || info.ID != id {
		t.Fatalf("Restore: %v %+v", err, info)
	}
	if _, err := box.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := box.Files.Read(ctx, "/home/user/state.txt"); err != nil || string(got) != "at the snapshot\n" {
		t.Fatalf("after Restore: %v %q", err, got)
	}
	if err := cs.DeleteSnapshot(ctx, id, snap.ID); err != nil {
		t.Fatal(err)
	}
	if list, err := cs.Snapshots(ctx, id); err != nil || len(list) != 0 {
		t.Fatalf("Snapshots after DeleteSnapshot: %v %+v", err, list)
	}

	// A fork's workspace kept on delete, listed, then removed.
	kept := forks[1].ID()
	if err := cs.DeleteKeepingWorkspace(ctx, kept); err != nil {
		t.Fatal(err)
	}
	ws, err := cs.Workspaces(ctx, "")
	if err != nil || len(ws) != 1 || ws[0].ID != kept || ws[0].ProjectID != project || ws[0].Name != "copy-2" {
		t.Fatalf("Workspaces: %v %+v", err, ws)
	}
	if err := cs.DeleteWorkspace(ctx, project, kept); err != nil {
		t.Fatal(err)
	}
	if ws, err := cs.Workspaces(ctx, project); err != nil || len(ws) != 0 {
		t.Fatalf("Workspaces after DeleteWorkspace: %v %+v", err, ws)
	}
	for _, c := range []string{id, forks[0].ID()} {
		if err := cs.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}
