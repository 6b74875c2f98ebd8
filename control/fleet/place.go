package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"deckhand/control/runtime"
	"deckhand/control/runtime/docker"
	"deckhand/control/runtime/kubernetes"
	"deckhand/control/servers"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Placement. A server's capacity is a number of containers: every
// container record that names the server counts against it, whatever its
// status (a stopped container keeps its workspace there), until it is
// deleted or moved. A new container of a project goes to a server the
// project's owner rents, else to one of the platform's pool (a server
// nobody rents); among those, to the one with the most free room, then
// by name. A draining server, and one another user rents, takes none.
// When no server has an endpoint, everything runs on the local engine.

// Place picks the servers of n new containers of a project whose owner
// is owner (in tx, at now). usage counts the containers each server holds
// already. pin, when pinned, is the server the containers must go to (it
// holds the snapshot or workspace they are made from; "" is the local
// engine). The answer's "" is the local engine.
func (f *Fleet) Place(tx *store.Tx, now time.Time, owner string, usage map[string]int, n int, pin string, pinned bool) ([]string, error) {
	rs, err := servers.Runners(tx)
	if err != nil {
		return nil, err
	}
	f.noteNames(rs)
	out := make([]string, n)
	if len(rs) == 0 {
		return out, nil
	}
	if pinned {
		if pin == "" {
			return out, nil
		}
		for _, r := range rs {
			if r.ID != pin {
				continue
			}
			switch {
			case r.Draining:
				return nil, fault.Errorf(fault.CodeConflict, "server %s holds what the container is made from, and it is draining: move it first", r.Name)
			case r.Rented(now) && !r.RentedBy(owner, now):
				return nil, fault.Errorf(fault.CodeConflict, "server %s holds what the container is made from, and another user rents it", r.Name)
			case r.Capacity-usage[r.ID] < n:
				return nil, fault.Errorf(fault.CodeConflict, "server %s holds what the container is made from, and it has room for %d more containers", r.Name, max(0, r.Capacity-usage[r.ID]))
			}
			for i := range out {
				out[i] = r.ID
			}
			return out, nil
		}
		return nil, fault.Errorf(fault.CodeConflict, "the server that holds what the container is made from has no endpoint any more")
	}
	var cands []servers.Runner
	for _, r := range rs {
		if !r.Draining && (!r.Rented(now) || r.RentedBy(owner, now)) {
			cands = append(cands, r)
		}
	}
	used := map[string]int{}
	for k, v := range usage {
		used[k] = v
	}
	for i := range out {
		sort.SliceStable(cands, func(a, b int) bool {
			ra, rb := cands[a].RentedBy(owner, now), cands[b].RentedBy(owner, now)
			if ra != rb {
				return ra
			}
			fa, fb := cands[a].Capacity-used[cands[a].ID], cands[b].Capacity-used[cands[b].ID]
			if fa != fb {
				return fa > fb
			}
			return cands[a].Name < cands[b].Name
		})
		picked := false
		for _, c := range cands {
			if c.Capacity-used[c.ID] > 0 {
				out[i], picked = c.ID, true
				used[c.ID]++
				break
			}
		}
		if !picked {
			return nil, &fault.Error{Code: fault.CodeConflict, Details: "capacity",
				Message: fmt.Sprintf("no server this project may use has room for %d more containers: every one is full, draining or rented by another user", n)}
		}
	}
	return out, nil
}

func (f *Fleet) noteNames(rs []servers.Runner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range rs {
		f.names[r.ID] = r.Name
	}
}

// movers are the server drivers that stream workspaces in and out
// (runtime.WorkspaceMover): a workspace moves between any two of them.
var movers = map[string]bool{servers.DriverDocker: true, servers.DriverKubernetes: true}

var (
	_ runtime.WorkspaceMover = (*docker.Driver)(nil)
	_ runtime.WorkspaceMover = (*kubernetes.Driver)(nil)
)

// CheckMove says whether a container may move from server from to server
// to (in tx): both hold workspaces a mover streams (a Docker engine or a
// Kubernetes cluster, in any pair), to has an endpoint, is not draining
// and has room. "" is the local engine, which may be a source only.
func (f *Fleet) CheckMove(tx *store.Tx, from, to string, usage map[string]int) error {
	rs, err := servers.Runners(tx)
	if err != nil {
		return err
	}
	f.noteNames(rs)
	var src, dst *servers.Runner
	for i := range rs {
		if rs[i].ID == from {
			src = &rs[i]
		}
		if rs[i].ID == to {
			dst = &rs[i]
		}
	}
	refuse := func(msg string, args ...any) error {
		return &fault.Error{Code: fault.CodeConflict, Field: "server_id", Details: "server_id", Message: "server_id: " + fmt.Sprintf(msg, args...)}
	}
	if dst == nil {
		return &fault.Error{Code: fault.CodeNotFound, Field: "server_id", Details: "server_id",
			Message: fmt.Sprintf("server_id: no server %q with an endpoint", to)}
	}
	switch {
	case from == to:
		return refuse("the container is on that server already")
	case from == "" && f.o.Local == nil:
		return refuse("the container is on the local engine and this control plane has none (--runtime none)")
	case from == "":
		if _, ok := f.o.Local.(runtime.WorkspaceMover); !ok {
			return refuse("the local engine's %s runtime cannot move workspaces", f.o.Local.Capabilities().Name)
		}
	case src == nil:
		return refuse("the container's server %q has no endpoint any more, so its workspace cannot be read", from)
	case !movers[src.Driver]:
		return refuse("the container's server %s runs %s, which cannot move workspaces", src.Name, src.Driver)
	}
	switch {
	case !movers[dst.Driver]:
		return refuse("server %s runs %s, which cannot move workspaces", dst.Name, dst.Driver)
	case dst.Draining:
		return refuse("server %s is draining", dst.Name)
	case dst.Capacity-usage[dst.ID] < 1:
		return refuse("server %s is full (%d containers)", dst.Name, dst.Capacity)
	}
	return nil
}

// mover is a server's driver as a runtime.WorkspaceMover.
func (f *Fleet) mover(ctx context.Context, server string) (runtime.Driver, runtime.WorkspaceMover, error) {
	d, err := f.server(ctx, server)
	if err != nil {
		return nil, nil, err
	}
	m, ok := d.(runtime.WorkspaceMover)
	if !ok {
		return nil, nil, fmt.Errorf("server %q: the %s runtime cannot move workspaces: %w", server, d.Capabilities().Name, runtime.ErrNotSupported)
	}
	return d, m, nil
}

// MoveWorkspace copies workspace ws (of project, its container made of
// image) from server from to server to as a tar stream, out of the
// source's engine and into the target's, whatever their drivers. The
// source keeps its copy: the caller removes it once the record names the
// target.
func (f *Fleet) MoveWorkspace(ctx context.Context, ws, project, image, from, to string) error {
	_, src, err := f.mover(ctx, from)
	if err != nil {
		return err
	}
	dd, dst, err := f.mover(ctx, to)
	if err != nil {
		return err
	}
	r, err := src.ExportWorkspace(ctx, ws, image)
	if errors.Is(err, runtime.ErrNotFound) {
		// Never made (a container that failed before its create): the
		// target makes an empty one when it starts.
		return nil
	}
	if err != nil {
		return err
	}
	err = dst.ImportWorkspace(ctx, ws, project, image, r)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("export the workspace: %w", cerr)
	}
	if err != nil {
		// Leave no half copy on the target.
		_ = dd.Delete(context.WithoutCancel(ctx), ws, false)
	}
	return err
}

// Remove deletes what server holds of container id (its workspace too).
func (f *Fleet) Remove(ctx context.Context, server, id string) error {
	d, err := f.server(ctx, server)
	if err != nil {
		return err
	}
	return d.Delete(ctx, id, false)
}

// Holder is the server that holds workspace ws or image (a snapshot's)
// when one does: found is false when none says so. A server that does
// not answer is skipped.
func (f *Fleet) Holder(ctx context.Context, ws, image string) (server string, found bool) {
	if _, err := f.refresh(ctx); err != nil {
		return "", false
	}
	f.mu.Lock()
	ids := []string{""}
	drvs := []runtime.Driver{f.o.Local}
	for id, m := range f.members {
		ids, drvs = append(ids, id), append(drvs, m.drv)
	}
	f.mu.Unlock()
	for i, d := range drvs {
		if d == nil {
			continue
		}
		if ws != "" {
			if m, ok := d.(runtime.WorkspaceMover); ok {
				if has, err := m.HasWorkspace(ctx, ws); err == nil && has {
					return ids[i], true
				}
			}
			continue
		}
		if image != "" {
			if has, err := d.ImageExists(ctx, image); err == nil && has {
				return ids[i], true
			}
		}
	}
	return "", false
}

var _ io.Closer = (*Fleet)(nil)
