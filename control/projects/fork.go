package projects

import (
	"context"
	"fmt"
	"strings"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// A create may name a snapshot (snapshot_id: a fork, the snapshot's
// files, packages and workspace as they were), a count (several
// containers at once, each with its own identity and agent token) and a
// kept workspace (workspace_id). The snapshot and the workspace must be
// the project's: another project's answer 404, as unknown ones.

// maxCount bounds count.
const maxCount = 10

// validateFork checks snapshot_id, count and workspace_id (and that an
// image or a snapshot is named).
func (in *ContainerCreate) validateFork() error {
	if in.ImageID == "" && in.SnapshotID == "" {
		return fault.Invalid("image_id", "is required (unless snapshot_id is given)")
	}
	if in.SnapshotID != "" {
		if err := validID("snapshot_id", in.SnapshotID); err != nil {
			return err
		}
	}
	if in.WorkspaceID != "" {
		if err := validID("workspace_id", in.WorkspaceID); err != nil {
			return err
		}
	}
	if in.Count != nil {
		n := *in.Count
		if n < 1 || n > maxCount {
			return fault.Invalid("count", "must be between 1 and %d, got %d", maxCount, n)
		}
		if n > 1 && in.WorkspaceID != "" {
			return fault.Invalid("workspace_id", "a workspace is mounted by one container: not with count above 1")
		}
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("%s-%d", in.Name, i)
			if err := cleanName("name", &name); err != nil {
				return fault.Invalid("name", "with count %d, %s-%d must be 1-%d characters", n, in.Name, n, maxName)
			}
		}
	}
	return nil
}

// forkDesc is the create route's words on snapshot_id, count and
// workspace_id.
const forkDesc = " `snapshot_id` makes the container from a snapshot of a container of the project (POST " +
	"/api/v1/containers/{id}/snapshots): its files, installed packages and workspace as they were, with its own identity and " +
	"agent token; `image_id` may then be left out (400 when it names another image than the snapshot's). `count` 1-10 makes " +
	"that many, named `<name>-1` ... `<name>-<count>`, and the answer's `data` is then an array of them (400 `count` for 0 or " +
	"above 10; the containers quota counts them all). `workspace_id` mounts a kept workspace of the project (GET " +
	"/api/v1/projects/{id}/workspaces) as the home: 409 while another container mounts it, 400 with `count` above 1. 404 " +
	"`snapshot_id` or `workspace_id` for one the project does not have (another project's too)."

// ContainersCreated is the answer of POST /api/v1/containers: the
// container, or an array of them when count was given.
type ContainersCreated struct {
	Body any
}

// CreateContainers is POST /api/v1/containers.
func (s *Service) CreateContainers(ctx context.Context, in ContainerCreate) (ContainersCreated, error) {
	cs, err := s.createContainers(ctx, in)
	if err != nil {
		return ContainersCreated{}, err
	}
	if in.Count == nil {
		return ContainersCreated{Body: cs[0]}, nil
	}
	return ContainersCreated{Body: cs}, nil
}

func errNoSnapshot(id string) error {
	return &fault.Error{Code: fault.CodeNotFound, Field: "snapshot_id", Details: "snapshot_id",
		Message: fmt.Sprintf("snapshot_id: the project has no snapshot %q", id)}
}

// createContainers makes the containers of a create in a project the
// caller owns or manages (admins: any project) and starts provisioning
// them; answered decorated, in creating. Every refusal (unknown or
// unusable image, a limit out of range, the quota, a name taken) comes
// before anything is written or asked of the engine.
func (s *Service) createContainers(ctx context.Context, in ContainerCreate) ([]*Container, error) {
	caller, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	// The project before the image: a caller learns nothing of a project
	// it may not see from the image's answer.
	var snap *Snapshot
	if err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		if err := creatable(tx, in.ProjectID, caller); err != nil {
			return err
		}
		if in.SnapshotID == "" {
			return nil
		}
		sn, err := get[Snapshot](tx, bucketSnapshots, in.SnapshotID)
		if err != nil {
			return err
		}
		if sn == nil || sn.ProjectID != in.ProjectID {
			return errNoSnapshot(in.SnapshotID)
		}
		snap = sn
		return nil
	}); err != nil {
		return nil, fault.Wrap("read the project", err)
	}
	imageID, imageName := in.ImageID, ""
	if snap != nil {
		if imageID != "" && imageID != snap.ImageID {
			return nil, fault.Invalid("image_id", "snapshot %s was taken of a container of image %s: leave image_id out, or give that one", snap.ID, snap.ImageID)
		}
		imageID, imageName = snap.ImageID, snap.ImageName
		if s.lc.rt.Driver == nil {
			return nil, errRecordsOnly
		}
	} else if imageName, err = s.env.Images.Resolve(ctx, in.ImageID); err != nil {
		return nil, err
	}
	n, names := 1, []string{in.Name}
	if in.Count != nil {
		n, names = *in.Count, nil
		for i := 1; i <= n; i++ {
			names = append(names, fmt.Sprintf("%s-%d", in.Name, i))
		}
	}
	now := s.now()
	out := make([]*Container, n)
	for i := range out {
		out[i] = &Container{ID: newID(), ProjectID: in.ProjectID, Name: names[i], ImageID: imageID, ImageName: imageName, SnapshotID: in.SnapshotID,
			Autostart: in.Autostart, Env: in.Env, WorkspaceID: in.WorkspaceID, Status: StatusCreating, CreatedAt: now, UpdatedAt: now,
			IdleTimeoutSeconds: in.IdleTimeoutSeconds, IdleAction: in.idleAction()}
		if in.Resources != nil {
			out[i].Resources = *in.Resources
		}
	}
	claim := s.newPoolClaim(&in, imageName, out)
	if in.WorkspaceID != "" {
		unlock := s.lc.lock("workspace/" + in.WorkspaceID)
		defer unlock()
	}
	pin := s.pinFor(ctx, in, snap)
	var tokens map[string]string
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if err := creatable(tx, in.ProjectID, caller); err != nil {
			return err
		}
		if snap != nil {
			if sn, err := get[Snapshot](tx, bucketSnapshots, snap.ID); err != nil || sn == nil {
				if err == nil {
					err = errNoSnapshot(snap.ID)
				}
				return err
			}
		}
		cs, err := projectContainers(tx, in.ProjectID, 0)
		if err != nil {
			return err
		}
		if max := s.lc.rt.MaxPerProject; max > 0 && len(cs)+n > max {
			return &fault.Error{Code: fault.CodeConflict, Field: "project_id", Details: "project_id",
				Message: fmt.Sprintf("project_id: the project has %d containers and %d more would pass the most this control plane allows (--max-containers-per-project %d); delete one first", len(cs), n, max)}
		}
		for _, c := range out {
			for _, o := range cs {
				if strings.EqualFold(o.Name, c.Name) {
					return &fault.Error{Code: fault.CodeConflict, Field: "name", Details: "name",
						Message: fmt.Sprintf("name: the project already has a container named %q (names are unique in a project, ignoring case)", c.Name)}
				}
			}
		}
		if in.WorkspaceID != "" {
			if err := attachWorkspace(tx, in.ProjectID, in.WorkspaceID, out[0].ID); err != nil {
				return err
			}
		}
		if err := claim.take(tx, ctx); err != nil {
			return err
		}
		if err := s.placeContainers(tx, in.ProjectID, claim.unclaimed(out), pin); err != nil {
			return err
		}
		if tokens, err = s.mintCreated(tx, ctx, claim.unclaimed(out)); err != nil {
			return err
		}
		for _, c := range out {
			if err := tx.Put(bucketContainers, c.ID, c); err != nil {
				return err
			}
			payload := map[string]any{"name": c.Name, "image_id": c.ImageID}
			if snap != nil {
				payload["snapshot_id"] = snap.ID
			}
			if c.WorkspaceID != "" {
				payload["workspace_id"] = c.WorkspaceID
			}
			if err := s.event(tx, ctx, events.Event{EventType: events.ContainerCreating, ResourceType: events.ResContainer, ResourceID: c.ID,
				ProjectID: c.ProjectID, ContainerID: c.ID, Payload: events.Payload(payload)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("create the container", err)
	}
	for i, c := range out {
		if !claim.started(ctx, c) {
			s.provisionMinted(c.ID, tokens[c.ID])
		}
		out[i] = s.decorate(c)
	}
	claim.refill()
	return out, nil
}
