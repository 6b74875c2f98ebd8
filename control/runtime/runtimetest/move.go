package runtimetest

import (
	"errors"
	"testing"
	"time"

	"deckhand/control/runtime"
)

// move: a stopped container's workspace streams out of one installation
// and into another (runtime.WorkspaceMover), with its files, owners,
// modes and links; a container made there from the same spec finds it
// and seeds nothing over it; each side's delete leaves nothing.
func (s *suite) move(t *testing.T) {
	src, srcInst := s.driver(t)
	from, ok := src.(runtime.WorkspaceMover)
	if !ok {
		t.Skip("the driver moves no workspaces")
	}
	dst, dstInst := s.driver(t)
	to := dst.(runtime.WorkspaceMover)
	ctx := ctxT(t)
	id := "mv-" + RandomName()
	if has, err := from.HasWorkspace(ctx, id); err != nil || has {
		t.Fatalf("a workspace never made: has %v, %v", has, err)
	}
	if r, err := from.ExportWorkspace(ctx, id, s.target.Image); !errors.Is(err, runtime.ErrNotFound) {
		if r != nil {
			_ = r.Close()
		}
		t.Fatalf("export of a workspace never made: %v, want ErrNotFound", err)
	}
	Shell(t, s.up(ctx, t, src, s.spec(id)), `cd /home/user && echo moved > moved.txt && mkdir -p dir/sub && echo deep > dir/sub/f &&
ln -s moved.txt link && chown -R 1000:1000 moved.txt dir link && chmod 640 moved.txt && rm .profile`)
	if err := src.Stop(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if has, err := from.HasWorkspace(ctx, id); err != nil || !has {
		t.Fatalf("the stopped container's workspace: has %v, %v", has, err)
	}
	r, err := from.ExportWorkspace(ctx, id, s.target.Image)
	if err != nil {
		t.Fatal(err)
	}
	ierr := to.ImportWorkspace(ctx, id, "prj-"+id, s.target.Image, r)
	if cerr := r.Close(); ierr != nil || cerr != nil {
		t.Fatalf("import: %v; closing the export: %v", ierr, cerr)
	}
	if has, err := to.HasWorkspace(ctx, id); err != nil || !has {
		t.Fatalf("the imported workspace: has %v, %v", has, err)
	}
	if err := src.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	s.noLeftovers(t, srcInst, "")

	want := "moved|deep|moved.txt|1000 640|1000|absent"
	got := Shell(t, s.up(ctx, t, dst, s.spec(id)), `cd /home/user && printf '%s|%s|%s|%s|%s|%s' "$(cat moved.txt)" "$(cat dir/sub/f)" `+
		`"$(readlink link)" "$(stat -c '%u %a' moved.txt)" "$(stat -c %u dir/sub/f)" "$(test -e .profile && echo seeded || echo absent)"`)
	if s.target.ArchiveDropsOwners {
		want = "moved|deep|moved.txt|0 640|0|absent"
	}
	if got != want {
		t.Fatalf("the moved workspace: %q, want %q", got, want)
	}
	if err := dst.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	s.noLeftovers(t, dstInst, "")
}
