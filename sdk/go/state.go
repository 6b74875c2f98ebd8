package deckhand

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// What keeps a container's state: pause and resume, snapshots and forks,
// workspaces that outlive a container, and keep-alive leases against its
// idle timeout. The same verbs are in the TypeScript and Python SDKs.

// Snapshot is a snapshot of a container's filesystem and workspace, as a
// value.
type Snapshot struct {
	ID          string
	Name        string
	ContainerID string
	ProjectID   string
	SizeBytes   int64
	// ImageName is the engine's reference of the snapshot's image.
	ImageName string
	CreatedAt time.Time
}

type wireSnapshot struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	ContainerID string    `json:"container_id"`
	ProjectID   string    `json:"project_id"`
	SizeBytes   int64     `json:"size_bytes"`
	ImageName   string    `json:"image_name"`
	CreatedAt   time.Time `json:"created_at"`
}

// Workspace is a workspace volume kept after its container was deleted.
type Workspace struct {
	ID        string
	ProjectID string
	// Name is the name of the container that made it; ContainerID the
	// container that mounts it now (empty: none).
	Name        string
	ContainerID string
	CreatedAt   time.Time
}

type wireWorkspace struct {
	ID          string    `json:"id"`
	ProjectID   string    `json:"project_id"`
	Name        string    `json:"name"`
	ContainerID string    `json:"container_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// Lease is a keep-alive lease on a container's agent: until ExpiresAt the
// container does not count as idle.
type Lease struct {
	ID        string
	Duration  time.Duration
	CreatedAt time.Time
	ExpiresAt time.Time
}

// ForkOptions tune Containers.Fork.
type ForkOptions struct {
	// Project is the snapshot's project; empty: the caller's only one.
	Project string
	// Name names the copies <Name>-1 ... <Name>-<Count>; required.
	Name string
	// Count is how many copies, 1-10 (0: 1).
	Count int
}

func containerPath(id string, rest ...string) string {
	p := "/api/v1/containers/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// Pause freezes a running container's processes (memory, connections
// and output offsets stay as they were).
func (cs Containers) Pause(ctx context.Context, id string) (ContainerInfo, error) {
	return cs.act(ctx, id, "pause")
}

// Resume thaws a paused container; the answer comes once its agent
// answers again.
func (cs Containers) Resume(ctx context.Context, id string) (ContainerInfo, error) {
	return cs.act(ctx, id, "resume")
}

// Snapshot takes a snapshot named name of container id.
func (cs Containers) Snapshot(ctx context.Context, id, name string) (Snapshot, error) {
	var w wireSnapshot
	err := cs.c.Call(ctx, http.MethodPost, containerPath(id, "snapshots"), nil, map[string]any{"name": name}, &w)
	return Snapshot(w), err
}

// Snapshots lists container id's snapshots, oldest first.
func (cs Containers) Snapshots(ctx context.Context, id string) ([]Snapshot, error) {
	var list struct {
		Snapshots []wireSnapshot `json:"snapshots"`
	}
	if err := cs.c.Call(ctx, http.MethodGet, containerPath(id, "snapshots"), nil, nil, &list); err != nil {
		return nil, err
	}
	out := make([]Snapshot, len(list.Snapshots))
	for i, w := range list.Snapshots {
		out[i] = Snapshot(w)
	}
	return out, nil
}

// RenameSnapshot renames snapshot sid of container id.
func (cs Containers) RenameSnapshot(ctx context.Context, id, sid, name string) (Snapshot, error) {
	var w wireSnapshot
	err := cs.c.Call(ctx, http.MethodPatch, containerPath(id, "snapshots", sid), nil, map[string]any{"name": name}, &w)
	return Snapshot(w), err
}

// DeleteSnapshot removes snapshot sid of container id.
func (cs Containers) DeleteSnapshot(ctx context.Context, id, sid string) error {
	return cs.c.Call(ctx, http.MethodDelete, containerPath(id, "snapshots", sid), nil, nil, nil)
}

// Restore puts container id back to snapshot sid (what changed since is
// lost); it answers in creating: WaitRunning before using its agent.
func (cs Containers) Restore(ctx context.Context, id, sid string) (ContainerInfo, error) {
	var w wireContainer
	err := cs.c.Call(ctx, http.MethodPost, containerPath(id, "snapshots", sid, "restore"), nil, nil, &w)
	return w.info(), err
}

// Fork makes o.Count containers from snapshot snapshotID, each with its
// own identity, and answers their handles in creating.
func (cs Containers) Fork(ctx context.Context, snapshotID string, o ForkOptions) ([]*Container, error) {
	if snapshotID == "" || o.Name == "" {
		return nil, errors.New("deckhand: Containers.Fork: snapshot id and ForkOptions.Name: required")
	}
	project, err := cs.project(ctx, o.Project)
	if err != nil {
		return nil, err
	}
	var ws []wireContainer
	body := map[string]any{"project_id": project, "name": o.Name, "snapshot_id": snapshotID, "count": cmp.Or(o.Count, 1)}
	if err := cs.c.Call(ctx, http.MethodPost, "/api/v1/containers", nil, body, &ws); err != nil {
		return nil, err
	}
	out := make([]*Container, len(ws))
	for i, w := range ws {
		out[i] = cs.c.container(w.info())
	}
	return out, nil
}

// Workspaces lists project's kept workspaces (empty: the caller's only
// project), oldest first.
func (cs Containers) Workspaces(ctx context.Context, project string) ([]Workspace, error) {
	project, err := cs.project(ctx, project)
	if err != nil {
		return nil, err
	}
	var list struct {
		Workspaces []wireWorkspace `json:"workspaces"`
	}
	if err := cs.c.Call(ctx, http.MethodGet, "/api/v1/projects/"+url.PathEscape(project)+"/workspaces", nil, nil, &list); err != nil {
		return nil, err
	}
	out := make([]Workspace, len(list.Workspaces))
	for i, w := range list.Workspaces {
		out[i] = Workspace(w)
	}
	return out, nil
}

// DeleteWorkspace removes kept workspace id of project.
func (cs Containers) DeleteWorkspace(ctx context.Context, project, id string) error {
	return cs.c.Call(ctx, http.MethodDelete, "/api/v1/projects/"+url.PathEscape(project)+"/workspaces/"+url.PathEscape(id), nil, nil, nil)
}

// DeleteKeepingWorkspace removes container id but keeps its workspace
// (listed by Workspaces under the container's id).
func (cs Containers) DeleteKeepingWorkspace(ctx context.Context, id string) error {
	return cs.c.Call(ctx, http.MethodDelete, containerPath(id), url.Values{"keep_workspace": {"true"}}, nil, nil)
}

// Keepalive takes a keep-alive lease on the container's agent for d
// (whole seconds, 1 s-24 h): until it ends the container does not count
// as idle, so its idle timeout neither stops nor pauses it.
func (c *Container) Keepalive(ctx context.Context, d time.Duration) (Lease, error) {
	if d < time.Second || d > 24*time.Hour || d%time.Second != 0 {
		return Lease{}, errors.New("deckhand: Container.Keepalive: whole seconds between 1s and 24h")
	}
	var w struct {
		ID              string    `json:"id"`
		DurationSeconds int       `json:"duration_seconds"`
		CreatedAt       time.Time `json:"created_at"`
		ExpiresAt       time.Time `json:"expires_at"`
	}
	// The gateway takes the leases route on any service's host; the
	// process service's is the one whose permission it needs.
	err := c.Call(ctx, http.MethodPost, "process", "/api/v1/agent/leases", nil, map[string]any{"duration_seconds": int(d / time.Second)}, &w)
	return Lease{ID: w.ID, Duration: time.Duration(w.DurationSeconds) * time.Second, CreatedAt: w.CreatedAt, ExpiresAt: w.ExpiresAt}, err
}
