package projects

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/runtime"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Snapshots of a container are engine images of its files and its
// workspace (the runtime driver commits both). The store keeps one
// record per snapshot, with the engine's reference, in the project's
// quota; each change writes its event in the transaction that writes
// the record. A restore makes the container again from the image (a new
// workspace volume filled from it); a fork (a create with snapshot_id)
// makes new containers from it. A snapshot a container runs from stays
// in the engine until the last such container is deleted or restored
// from another one, also when its record is deleted.

// Snapshot is a snapshot of a container.
type Snapshot struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	ContainerID string `json:"container_id"`
	ProjectID   string `json:"project_id"`
	SizeBytes   int64  `json:"size_bytes"`
	// ImageName is the engine's reference of the snapshot's image.
	ImageName string `json:"image_name"`
	// ImageID is the catalog image the container ran when it was taken.
	ImageID   string    `json:"image_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

const bucketSnapshots = "projects_snapshots"

// snapshotTable: a container's snapshots and a project's (the quota) are
// store pages in creation order (on PostgreSQL the table
// projects_snapshots).
var snapshotTable = store.Declare(bucketSnapshots, []store.Field[Snapshot]{
	store.Text("container_id", func(s *Snapshot) string { return s.ContainerID }),
	store.Text("project_id", func(s *Snapshot) string { return s.ProjectID }),
	store.Text("image_name", func(s *Snapshot) string { return s.ImageName }),
	store.Time("created_at", func(s *Snapshot) time.Time { return s.CreatedAt }),
}, store.Index{Fields: []string{"container_id", "created_at"}, Sort: true},
	store.Index{Fields: []string{"project_id", "created_at"}, Sort: true})

// SnapshotCreate is POST /api/v1/containers/{id}/snapshots.
type SnapshotCreate struct {
	ContainerRef
	Body SnapshotName
}

// SnapshotName is the body of a snapshot's create and rename.
type SnapshotName struct {
	Name string `json:"name" required:"true" doc:"1-100 characters, unique among the container's snapshots (ignoring case)"`
}

// Validate checks the name.
func (in *SnapshotCreate) Validate() error {
	return cleanName("name", &in.Body.Name)
}

// SnapshotRef names a snapshot of a container.
type SnapshotRef struct {
	ContainerRef
	SnapshotID string `path:"sid" doc:"a snapshot id: 1-40 lowercase letters or digits"`
}

// Validate checks the snapshot id's format.
func (in *SnapshotRef) Validate() error { return validID("sid", in.SnapshotID) }

// SnapshotRename is PATCH /api/v1/containers/{id}/snapshots/{sid}.
type SnapshotRename struct {
	SnapshotRef
	Body SnapshotName
}

// Validate checks the ids and the name.
func (in *SnapshotRename) Validate() error {
	if err := in.SnapshotRef.Validate(); err != nil {
		return err
	}
	return cleanName("name", &in.Body.Name)
}

// SnapshotList is GET /api/v1/containers/{id}/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

func (s *Service) snapshotEvent(tx *store.Tx, ctx context.Context, kind string, sn *Snapshot, payload map[string]any) error {
	if payload == nil {
		payload = map[string]any{}
	}
	payload["snapshot_id"], payload["name"] = sn.ID, sn.Name
	return s.event(tx, ctx, events.Event{EventType: kind, ResourceType: events.ResContainer, ResourceID: sn.ContainerID,
		ProjectID: sn.ProjectID, ContainerID: sn.ContainerID, Payload: events.Payload(payload)})
}

// quotaErr answers a project at its snapshot quota.
func (s *Service) quotaErr(n int) error {
	return &fault.Error{Code: fault.CodeConflict, Details: "snapshots",
		Message: fmt.Sprintf("the project has %d snapshots, the most this control plane allows (--max-snapshots-per-project %d); delete one first",
			n, s.lc.rt.MaxSnapshots)}
}

// snapshotAllowed checks the quota and the name in tx.
func (s *Service) snapshotAllowed(tx *store.Tx, c *Container, name string) error {
	if max := s.lc.rt.MaxSnapshots; max > 0 {
		all, err := where[Snapshot](tx, snapshotTable, "project_id", c.ProjectID, 0)
		if err != nil {
			return err
		}
		if len(all) >= max {
			return s.quotaErr(len(all))
		}
	}
	return s.snapshotNameFree(tx, c.ID, "", name)
}

func (s *Service) snapshotNameFree(tx *store.Tx, container, except, name string) error {
	mine, err := where[Snapshot](tx, snapshotTable, "container_id", container, 0)
	if err != nil {
		return err
	}
	for _, o := range mine {
		if o.ID != except && strings.EqualFold(o.Name, name) {
			return &fault.Error{Code: fault.CodeConflict, Field: "name", Details: "name",
				Message: fmt.Sprintf("name: the container already has a snapshot named %q (names are unique per container, ignoring case)", name)}
		}
	}
	return nil
}

// CreateSnapshot commits a container's files and workspace into a
// snapshot: 201 with it. The container is frozen for the commit and goes
// on as it was (running, paused or stopped).
func (s *Service) CreateSnapshot(ctx context.Context, in SnapshotCreate) (*Snapshot, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !drv.Capabilities().Snapshots {
		return nil, errRuntime(drv, "takes no snapshots")
	}
	switch c.Status {
	case StatusRunning, StatusPaused, StatusStopped:
	default:
		return nil, &fault.Error{Code: fault.CodeConflict, Details: "status",
			Message: fmt.Sprintf("container %s is %s: a snapshot is taken of a running, paused or stopped container", id, c.Status)}
	}
	// The quota and the name before the engine works, and again in the
	// write (another container of the project may take one meanwhile).
	if err := s.db.ViewContext(ctx, func(tx *store.Tx) error { return s.snapshotAllowed(tx, c, in.Body.Name) }); err != nil {
		return nil, fault.Wrap("read the snapshots", err)
	}
	sn := &Snapshot{ID: newID(), Name: in.Body.Name, ContainerID: id, ProjectID: c.ProjectID, ImageID: c.ImageID}
	img, err := drv.Snapshot(ctx, id, sn.ID)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil, &fault.Error{Code: fault.CodeConflict, Details: "status", Message: removedReason}
	}
	if err != nil {
		return nil, engineErr("take the snapshot", err)
	}
	sn.ImageName, sn.SizeBytes, sn.CreatedAt = img.Image, img.SizeBytes, s.now()
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if err := s.snapshotAllowed(tx, c, sn.Name); err != nil {
			return err
		}
		if err := tx.Put(bucketSnapshots, sn.ID, sn); err != nil {
			return err
		}
		return s.snapshotEvent(tx, ctx, events.SnapshotCreated, sn, map[string]any{"size_bytes": sn.SizeBytes})
	})
	if err != nil {
		// Leave nothing the record does not name.
		if derr := drv.DeleteSnapshot(context.WithoutCancel(ctx), sn.ID); derr != nil {
			s.log.Warn("snapshot: removing the image of a snapshot not recorded", "snapshot", sn.ID, "err", derr)
		}
		return nil, fault.Wrap("record the snapshot", err)
	}
	return sn, nil
}

// ListSnapshots is a container's snapshots, oldest first.
func (s *Service) ListSnapshots(ctx context.Context, in ContainerRef) (*SnapshotList, error) {
	return domain.Transact(ctx, s.db.ViewContext, "list the snapshots", func(tx *store.Tx) (*SnapshotList, error) {
		if _, err := findContainer(tx, in.ID); err != nil {
			return nil, err
		}
		list, err := where[Snapshot](tx, snapshotTable, "container_id", in.ID, 0)
		return &SnapshotList{Snapshots: nonNil(list)}, err
	})
}

// snapshotOf is snapshot sid of container id (404 naming sid when the
// container has none of that id).
func snapshotOf(tx *store.Tx, id, sid string) (*Snapshot, error) {
	sn, err := get[Snapshot](tx, bucketSnapshots, sid)
	if err != nil {
		return nil, err
	}
	if sn == nil || sn.ContainerID != id {
		return nil, &fault.Error{Code: fault.CodeNotFound, Field: "sid", Details: "snapshot",
			Message: fmt.Sprintf("sid: container %s has no snapshot %q", id, sid)}
	}
	return sn, nil
}

// RenameSnapshot changes a snapshot's name.
func (s *Service) RenameSnapshot(ctx context.Context, in SnapshotRename) (*Snapshot, error) {
	return domain.Transact(ctx, s.db.UpdateContext, "rename the snapshot", func(tx *store.Tx) (*Snapshot, error) {
		sn, err := snapshotOf(tx, in.ID, in.SnapshotID)
		if err != nil || sn.Name == in.Body.Name {
			return sn, err
		}
		if err := s.snapshotNameFree(tx, in.ID, sn.ID, in.Body.Name); err != nil {
			return nil, err
		}
		from := sn.Name
		sn.Name = in.Body.Name
		if err := tx.Put(bucketSnapshots, sn.ID, sn); err != nil {
			return nil, err
		}
		return sn, s.snapshotEvent(tx, ctx, events.SnapshotRenamed, sn, map[string]any{"from": from, "to": sn.Name})
	})
}

// DeleteSnapshot deletes a snapshot's record, and its image from the
// engine unless a container runs from it (a fork, or one restored from
// it): the image then goes with the last of those.
func (s *Service) DeleteSnapshot(ctx context.Context, in SnapshotRef) error {
	c, drv, unlock, err := s.locked(ctx, in.ID)
	if err != nil {
		return err
	}
	defer unlock()
	var sn *Snapshot
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if sn, err = snapshotOf(tx, in.ID, in.SnapshotID); err != nil {
			return err
		}
		if err := tx.Delete(bucketSnapshots, sn.ID); err != nil {
			return err
		}
		return s.snapshotEvent(tx, ctx, events.SnapshotDeleted, sn, nil)
	})
	if err != nil {
		return fault.Wrap("delete the snapshot", err)
	}
	s.releaseSnapshots(ctx, drv, c.ProjectID, []string{sn.ID}, "")
	return nil
}

// releaseSnapshots removes from the engine the images of the snapshots
// of ids whose record is gone and that no container of the project but
// except runs from. A failure is logged: the image stays, labelled.
func (s *Service) releaseSnapshots(ctx context.Context, drv runtime.Driver, project string, ids []string, except string) {
	if drv == nil || len(ids) == 0 {
		return
	}
	var free []string
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		cs, err := projectContainers(tx, project, 0)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for _, o := range cs {
			if o.ID != except {
				used[o.SnapshotID] = true
			}
		}
		for _, id := range ids {
			sn, err := get[Snapshot](tx, bucketSnapshots, id)
			if err != nil {
				return err
			}
			if id != "" && sn == nil && !used[id] {
				free = append(free, id)
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("snapshot: reading what runs from snapshots", "err", err)
		return
	}
	for _, id := range free {
		if err := drv.DeleteSnapshot(context.WithoutCancel(ctx), id); err != nil {
			s.log.Warn("snapshot: removing the image of a deleted snapshot", "snapshot", id, "err", err)
		}
	}
}

// heldSnapshots are the snapshots container c holds in the engine: its
// own and the one it runs from.
func (s *Service) heldSnapshots(ctx context.Context, c *Container) []string {
	ids := []string{c.SnapshotID}
	_ = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		list, err := where[Snapshot](tx, snapshotTable, "container_id", c.ID, 0)
		for _, sn := range list {
			ids = append(ids, sn.ID)
		}
		return err
	})
	return ids
}

// RestoreSnapshot puts a container back to a snapshot: the engine
// container and its workspace volume are made again from the snapshot's
// image (with a fresh agent token), and the container starts. It
// answers in creating; the container is running once its agent answers.
func (s *Service) RestoreSnapshot(ctx context.Context, in SnapshotRef) (*Container, error) {
	id := in.ID
	c, drv, unlock, err := s.locked(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !drv.Capabilities().Snapshots {
		return nil, errRuntime(drv, "takes no snapshots")
	}
	if c.Status == StatusDeleting || c.Status == StatusCreating {
		return nil, &fault.Error{Code: fault.CodeConflict, Details: "status",
			Message: fmt.Sprintf("container %s is %s: wait until it is running, stopped or failed", id, c.Status)}
	}
	sn, err := domain.Transact(ctx, s.db.ViewContext, "read the snapshot", func(tx *store.Tx) (*Snapshot, error) {
		return snapshotOf(tx, id, in.SnapshotID)
	})
	if err != nil {
		return nil, err
	}
	if ok, err := drv.ImageExists(ctx, sn.ImageName); err != nil {
		return nil, engineErr("restore the snapshot", err)
	} else if !ok {
		return nil, &fault.Error{Code: fault.CodeConflict, Field: "sid", Details: "sid",
			Message: "sid: the engine no longer holds snapshot " + sn.ID + "'s image " + sn.ImageName}
	}
	// The container and its workspace go; the provisioning makes both
	// again from the snapshot's image.
	if err := drv.Delete(ctx, id, false); err != nil {
		return nil, engineErr("restore the snapshot", err)
	}
	if c.WorkspaceID != "" {
		if err := drv.Delete(ctx, c.WorkspaceID, false); err != nil {
			return nil, engineErr("restore the snapshot's workspace", err)
		}
	}
	out, err := domain.Transact(ctx, s.db.UpdateContext, "record the restore", func(tx *store.Tx) (*Container, error) {
		cur, err := getContainer(tx, id)
		if err != nil || cur == nil {
			return nil, err
		}
		cur.ImageName, cur.SnapshotID, cur.Recreate, cur.AgentAddr = sn.ImageName, sn.ID, false, ""
		if err := s.snapshotEvent(tx, ctx, events.SnapshotRestored, sn, nil); err != nil {
			return nil, err
		}
		return cur, s.setStatus(tx, ctx, cur, StatusCreating, "")
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errGone
	}
	if c.SnapshotID != sn.ID {
		s.releaseSnapshots(ctx, drv, c.ProjectID, []string{c.SnapshotID}, "")
	}
	s.provisionAsync(id)
	return s.decorate(out), nil
}

// dropSnapshotRecords deletes container id's snapshot records (in tx).
func dropSnapshotRecords(tx *store.Tx, id string) error {
	list, err := where[Snapshot](tx, snapshotTable, "container_id", id, 0)
	if err != nil {
		return err
	}
	for _, sn := range list {
		if err := tx.Delete(bucketSnapshots, sn.ID); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) snapshotRoutes(operate, manage, read platform.Policy, actErrs string) []platform.Route {
	tags := []string{"container snapshots"}
	base := "/api/v1/containers/{id}/snapshots"
	sidErrs := " 400 for a malformed id or sid; 404 for an unknown container, or a snapshot it does not have (sid); 403 when the caller may not act on it."
	return []platform.Route{
		{Method: http.MethodPost, Path: base, OperationID: "createSnapshot", Policy: manage, Tags: tags, Status: http.StatusCreated,
			Summary: "Snapshot a container: its files and its workspace",
			Description: "Commits the container's filesystem and its workspace volume into an image in the engine and answers 201 " +
				"`{id, name, container_id, project_id, size_bytes, image_name, created_at}`. The container is frozen for the commit " +
				"and goes on as it was. Installed packages, files anywhere and the workspace are kept; memory and running processes are " +
				"not. 400 `name` (1-100 characters); 409 `name` when the container has a snapshot of that name (ignoring case); 409 " +
				"when the project holds --max-snapshots-per-project snapshots; 409 when the container is creating, failed or being " +
				"deleted, or with --runtime none; 503 when the engine is unreachable. Writes `container.snapshot.created`." + actErrs,
			Message: "Snapshot created", Op: platform.Op(s.CreateSnapshot)},
		{Method: http.MethodGet, Path: base, OperationID: "listSnapshots", Policy: read, Tags: tags,
			Summary: "A container's snapshots, oldest first", Description: "400 for a malformed id; 404 for an unknown container; 403 when the caller is no member of its project.",
			Message: "Snapshots", Op: platform.Op(s.ListSnapshots)},
		{Method: http.MethodPatch, Path: base + "/{sid}", OperationID: "renameSnapshot", Policy: manage, Tags: tags,
			Summary: "Rename a snapshot", Description: "Body `name`: 1-100 characters, unique among the container's snapshots (409 `name`). " +
				"Writes `container.snapshot.renamed`." + sidErrs,
			Message: "Snapshot renamed", Op: platform.Op(s.RenameSnapshot)},
		{Method: http.MethodDelete, Path: base + "/{sid}", OperationID: "deleteSnapshot", Policy: manage, Tags: tags,
			Summary: "Delete a snapshot and its image",
			Description: "The record goes at once; the image stays in the engine while a container runs from it (a fork, or a " +
				"container restored from it) and goes with the last of them. A container's snapshots go with the container the same way. " +
				"Writes `container.snapshot.deleted`." + sidErrs,
			Message: "Snapshot deleted", Op: platform.CommandOp(s.DeleteSnapshot)},
		{Method: http.MethodPost, Path: base + "/{sid}/restore", OperationID: "restoreSnapshot", Policy: manage, Tags: tags,
			Summary: "Put a container back to a snapshot",
			Description: "Stops the container and makes it again from the snapshot: its files and its workspace are as they were " +
				"when the snapshot was taken (what changed since is lost), with a new agent token. Answers 200 in `creating`; the " +
				"container is `running` once its agent answers. 409 while it is creating or being deleted. Writes " +
				"`container.snapshot.restored` and `container.creating`, then `container.running` or `container.failed`." + sidErrs,
			Message: "Snapshot restored", Op: platform.Op(s.RestoreSnapshot)},
	}
}
