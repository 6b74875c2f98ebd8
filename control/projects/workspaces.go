package projects

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// A workspace is the volume mounted as a container's home. Deleted with
// keep_workspace, a container leaves its workspace behind as a record of
// the project (its id is the deleted container's), and a new container
// of the project mounts it with workspace_id: one container at a time.
// A workspace outlives every container that mounts it; only its own
// delete removes the volume.

// Workspace is a kept workspace of a project.
type Workspace struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	// Name is the name of the container that made it.
	Name string `json:"name"`
	// ContainerID is the container that mounts it now; empty: none.
	ContainerID string    `json:"container_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

const bucketWorkspaces = "projects_workspaces"

var workspaceTable = store.Declare(bucketWorkspaces, []store.Field[Workspace]{
	store.Text("project_id", func(w *Workspace) string { return w.ProjectID }),
	store.Text("container_id", func(w *Workspace) string { return w.ContainerID }),
	store.Time("created_at", func(w *Workspace) time.Time { return w.CreatedAt }),
}, store.Index{Fields: []string{"project_id", "created_at"}, Sort: true})

func projectWorkspaces(tx *store.Tx, project string, limit int) ([]Workspace, error) {
	return where[Workspace](tx, workspaceTable, "project_id", project, limit)
}

func projectHasWorkspaces(tx *store.Tx, project string) error {
	ws, err := projectWorkspaces(tx, project, 1)
	if err != nil {
		return err
	}
	if len(ws) > 0 {
		return fault.Errorf(fault.CodeConflict, "the project still has kept workspaces: delete them first (DELETE /api/v1/projects/%s/workspaces/{workspaceId})", project)
	}
	return nil
}

// attachWorkspace marks workspace id of project as mounted by container
// (in tx): 404 naming workspace_id when the project has none of that id,
// 409 when another container mounts it.
func attachWorkspace(tx *store.Tx, project, id, container string) error {
	w, err := get[Workspace](tx, bucketWorkspaces, id)
	if err != nil {
		return err
	}
	if w == nil || w.ProjectID != project {
		return &fault.Error{Code: fault.CodeNotFound, Field: "workspace_id", Details: "workspace_id",
			Message: fmt.Sprintf("workspace_id: the project has no workspace %q", id)}
	}
	if w.ContainerID != "" && w.ContainerID != container {
		return &fault.Error{Code: fault.CodeConflict, Field: "workspace_id", Details: "workspace_id",
			Message: fmt.Sprintf("workspace_id: container %s mounts workspace %s (one container at a time)", w.ContainerID, id)}
	}
	w.ContainerID = container
	return tx.Put(bucketWorkspaces, id, w)
}

// dropStateRecords deletes container id's snapshot records and keeps or
// lets go of its workspace (in the delete's transaction).
func (s *Service) dropStateRecords(tx *store.Tx, id string) error {
	c, err := getContainer(tx, id)
	if err != nil || c == nil {
		return err
	}
	if err := dropSnapshotRecords(tx, id); err != nil {
		return err
	}
	if c.WorkspaceID != "" {
		w, err := get[Workspace](tx, bucketWorkspaces, c.WorkspaceID)
		if err != nil || w == nil || w.ContainerID != id {
			return err
		}
		w.ContainerID = ""
		return tx.Put(bucketWorkspaces, w.ID, w)
	}
	if c.KeepWorkspace && c.ImageName != "" && s.lc.rt.Driver != nil {
		return tx.Put(bucketWorkspaces, id, &Workspace{ID: id, ProjectID: c.ProjectID, Name: c.Name, CreatedAt: s.now()})
	}
	return nil
}

// WorkspaceList is GET /api/v1/projects/{id}/workspaces.
type WorkspaceList struct {
	Workspaces []Workspace `json:"workspaces"`
}

// ListWorkspaces is a project's kept workspaces, oldest first.
func (s *Service) ListWorkspaces(ctx context.Context, in ProjectRef) (*WorkspaceList, error) {
	return domain.Transact(ctx, s.db.ViewContext, "list the workspaces", func(tx *store.Tx) (*WorkspaceList, error) {
		list, err := projectWorkspaces(tx, in.ID, 0)
		return &WorkspaceList{Workspaces: nonNil(list)}, err
	})
}

// WorkspaceRef names a workspace of a project.
type WorkspaceRef struct {
	ProjectRef
	WorkspaceID string `path:"workspaceId" doc:"a workspace id: 1-40 lowercase letters or digits"`
}

// Validate checks the workspace id's format.
func (in *WorkspaceRef) Validate() error { return validID("workspaceId", in.WorkspaceID) }

// DeleteWorkspace removes a kept workspace's volume from the engine,
// then its record.
func (s *Service) DeleteWorkspace(ctx context.Context, in WorkspaceRef) error {
	// The workspace's id is its first container's: that lock keeps a
	// create from attaching it meanwhile only through the store, so the
	// record is checked again in the write.
	unlock := s.lc.lock("workspace/" + in.WorkspaceID)
	defer unlock()
	check := func(tx *store.Tx) error {
		w, err := get[Workspace](tx, bucketWorkspaces, in.WorkspaceID)
		if err != nil {
			return err
		}
		if w == nil || w.ProjectID != in.ID {
			return &fault.Error{Code: fault.CodeNotFound, Field: "workspaceId", Details: "workspace",
				Message: fmt.Sprintf("workspaceId: project %s has no workspace %q", in.ID, in.WorkspaceID)}
		}
		if w.ContainerID != "" {
			return &fault.Error{Code: fault.CodeConflict, Field: "workspaceId", Details: "workspaceId",
				Message: fmt.Sprintf("workspaceId: container %s mounts workspace %s: delete that container first", w.ContainerID, w.ID)}
		}
		return nil
	}
	if err := s.db.ViewContext(ctx, check); err != nil {
		return fault.Wrap("read the workspace", err)
	}
	if drv := s.lc.rt.Driver; drv != nil {
		if err := drv.Delete(ctx, in.WorkspaceID, false); err != nil {
			return engineErr("delete the workspace", err)
		}
	}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if err := check(tx); err != nil {
			return err
		}
		return tx.Delete(bucketWorkspaces, in.WorkspaceID)
	})
	return fault.Wrap("delete the workspace", err)
}

func (s *Service) workspaceRoutes(member, manager platform.Policy) []platform.Route {
	tags := []string{"projects"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/projects/{id}/workspaces", OperationID: "listWorkspaces", Policy: member, Tags: tags,
			Summary: "The project's kept workspaces, oldest first",
			Description: "A container deleted with `?keep_workspace=true` leaves its workspace (the volume mounted as its home) " +
				"here: `{id, project_id, name, container_id, created_at}`; `id` is the deleted container's id and `name` its name, " +
				"`container_id` the container that mounts it now (absent: none). Create a container with `workspace_id` to mount one. " +
				"400 for a malformed id, 404 for an unknown project, 403 when the caller is no member.",
			Message: "Workspaces", Op: platform.Op(s.ListWorkspaces)},
		{Method: http.MethodDelete, Path: "/api/v1/projects/{id}/workspaces/{workspaceId}", OperationID: "deleteWorkspace", Policy: manager, Tags: tags,
			Summary: "Delete a kept workspace and its volume",
			Description: "409 `workspaceId` while a container mounts it (delete that container first: the workspace stays). 400 for a " +
				"malformed id; 404 for an unknown project or a workspace it does not have; 403 when the caller may not manage the " +
				"project; 503 when the engine is unreachable.",
			Message: "Workspace deleted", Op: platform.CommandOp(s.DeleteWorkspace)},
	}
}
