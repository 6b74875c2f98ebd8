package runtimetest

import (
	"errors"
	"testing"

	"deckhand/control/runtime"
)

// snapshot: a snapshot holds the container's files and its workspace
// (owners kept) while the container goes on running; a container made
// from it (a fork, or the container itself made again: a restore) has
// them as they were; the image is refused removal while a container
// uses it, and once removed nothing of it is left.
func (s *suite) snapshot(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	if !d.Capabilities().Snapshots {
		t.Skip("the driver takes no snapshots")
	}
	id := "snap-" + RandomName()
	addr := s.up(ctx, t, d, s.spec(id))
	Shell(t, addr, `echo one > /home/user/ws.txt; su -s /bin/sh user -c 'echo mine > /home/user/owned'; echo root-one > /etc/rootfile`)
	snapID := "s" + RandomName()
	snap, err := d.Snapshot(ctx, id, snapID)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if snap.Image == "" || snap.SizeBytes <= 0 {
		t.Fatalf("snapshot: %+v", snap)
	}
	// The container goes on as it was.
	if st, err := d.Inspect(ctx, id); err != nil || st.State != runtime.StateRunning {
		t.Fatalf("after the snapshot: %+v, %v", st, err)
	}
	Shell(t, addr, `echo two > /home/user/ws.txt; rm /etc/rootfile /home/user/owned`)

	const check = `cat /home/user/ws.txt /etc/rootfile; stat -c '%u %n' /home/user/owned`
	want := "one\nroot-one\n1000 /home/user/owned"
	if s.target.ArchiveDropsOwners {
		want = "one\nroot-one\n0 /home/user/owned"
	}
	fork := "fork-" + RandomName()
	spec := s.spec(fork)
	spec.Image = snap.Image
	forkAddr := s.up(ctx, t, d, spec)
	if got := Shell(t, forkAddr, check); got != want {
		t.Errorf("a container made from the snapshot: %q, want %q", got, want)
	}
	// Its own token file, not the source's.
	if got := Shell(t, forkAddr, "cat "+TokenPath); got != string(spec.Files[0].Content) {
		t.Errorf("the fork's token file: %q", got)
	}

	// Restore: the container made again from the snapshot, its
	// workspace volume anew.
	if err := d.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	spec = s.spec(id)
	spec.Image = snap.Image
	if got := Shell(t, s.up(ctx, t, d, spec), check); got != want {
		t.Errorf("the restored container: %q, want %q", got, want)
	}

	if err := d.DeleteSnapshot(ctx, snapID); !errors.Is(err, runtime.ErrInUse) {
		t.Fatalf("delete of a snapshot containers run: %v, want ErrInUse", err)
	}
	for _, x := range []string{id, fork} {
		if err := d.Delete(ctx, x, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if err := d.DeleteSnapshot(ctx, snapID); err != nil {
			t.Fatalf("delete the snapshot #%d: %v", i+1, err)
		}
	}
	if exists, err := d.ImageExists(ctx, snap.Image); err != nil || exists {
		t.Fatalf("the snapshot's image after delete: %v, %v", exists, err)
	}
	s.noLeftovers(t, inst, "")
}

// workspace: a workspace kept on delete is mounted by another container
// (Spec.Workspace), outlives that one's delete, and goes with a delete of
// its own id.
func (s *suite) workspace(t *testing.T) {
	d, inst := s.driver(t)
	ctx := ctxT(t)
	first := "ws-" + RandomName()
	Shell(t, s.up(ctx, t, d, s.spec(first)), `echo kept > /home/user/kept.txt`)
	if err := d.Delete(ctx, first, true); err != nil {
		t.Fatal(err)
	}
	second := "ws2-" + RandomName()
	spec := s.spec(second)
	spec.Workspace = first
	if got := Shell(t, s.up(ctx, t, d, spec), `cat /home/user/kept.txt`); got != "kept" {
		t.Fatalf("the kept workspace in another container: %q", got)
	}
	if err := d.Delete(ctx, second, false); err != nil {
		t.Fatal(err)
	}
	left, err := s.target.Leftovers(ctx, inst, "")
	if err != nil || len(left) != 1 {
		t.Fatalf("after the second container's delete: %v, %v (want the workspace's volume alone)", left, err)
	}
	if err := d.Delete(ctx, first, false); err != nil {
		t.Fatal(err)
	}
	s.noLeftovers(t, inst, "")
}
