package deckhand

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ContainerInfo is the control plane's record of a container, as a value.
type ContainerInfo struct {
	ID        string
	ProjectID string
	Name      string
	ImageID   string
	ImageName string
	// Status is creating, running, paused, stopped, failed or deleting;
	// StatusReason says why it failed (or why a delete waits).
	Status       string
	StatusReason string
	Autostart    bool
	CPUs         float64
	MemoryMB     int
	Env          map[string]string
	// Runtime is the engine that runs it (docker), or none when the
	// control plane keeps records only.
	Runtime string
	// URLs maps each agent service (process, files, terminal ...) to its
	// URL through the platform proxy.
	URLs map[string]string
	// AgentAddr is where the control plane reaches the agent's gateway
	// (host:port) while the container runs.
	AgentAddr string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// wireContainer is the record as the control plane answers it.
type wireContainer struct {
	ID           string            `json:"id"`
	ProjectID    string            `json:"project_id"`
	Name         string            `json:"name"`
	ImageID      string            `json:"image_id"`
	ImageName    string            `json:"image_name"`
	Status       string            `json:"status"`
	StatusReason string            `json:"status_reason"`
	Autostart    bool              `json:"autostart"`
	Env          map[string]string `json:"env"`
	Runtime      string            `json:"runtime"`
	URLs         map[string]string `json:"urls"`
	AgentAddr    string            `json:"agent_addr"`
	Resources    struct {
		CPUs     float64 `json:"cpus"`
		MemoryMB int     `json:"memory_mb"`
	} `json:"resources"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (w wireContainer) info() ContainerInfo {
	return ContainerInfo{ID: w.ID, ProjectID: w.ProjectID, Name: w.Name, ImageID: w.ImageID, ImageName: w.ImageName,
		Status: w.Status, StatusReason: w.StatusReason, Autostart: w.Autostart, CPUs: w.Resources.CPUs,
		MemoryMB: w.Resources.MemoryMB, Env: w.Env, Runtime: w.Runtime, URLs: w.URLs, AgentAddr: w.AgentAddr,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

// CreateOptions tune Containers.Create.
type CreateOptions struct {
	// Project is the project's id; empty: the caller's only project
	// (an error when it has none or several).
	Project string
	// Name is unique in the project; empty: "sandbox-" and a random suffix.
	Name      string
	Autostart bool
	// CPUs and MemoryMB limit the container (0: the engine's defaults;
	// give both or neither).
	CPUs     float64
	MemoryMB int
	Env      map[string]string
}

// StateError is a container that settled in a status other than the one
// waited for (failed, stopped, deleting), with the control plane's reason.
type StateError struct {
	ID, Status, Reason, Want string
}

func (e *StateError) Error() string {
	msg := fmt.Sprintf("deckhand: container %s is %s, not %s", e.ID, e.Status, e.Want)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Containers is the control plane's container API: Client.Containers.
type Containers struct{ c *Client }

// Create makes a container running image (a catalog image id img_...,
// or its alias) and answers its handle at once, in status creating; call
// WaitRunning before using its agent.
func (cs Containers) Create(ctx context.Context, image string, o CreateOptions) (*Container, error) {
	if strings.TrimSpace(image) == "" {
		return nil, errors.New("deckhand: Containers.Create: image: required (a catalog image id or alias)")
	}
	if (o.CPUs == 0) != (o.MemoryMB == 0) {
		return nil, errors.New("deckhand: Containers.Create: CPUs and MemoryMB: give both or neither")
	}
	project, err := cs.project(ctx, o.Project)
	if err != nil {
		return nil, err
	}
	imageID, err := cs.imageID(ctx, image)
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		name = "sandbox-" + hex.EncodeToString(b)
	}
	body := map[string]any{"project_id": project, "name": name, "image_id": imageID, "autostart": o.Autostart}
	if o.CPUs != 0 {
		body["resources"] = map[string]any{"cpus": o.CPUs, "memory_mb": o.MemoryMB}
	}
	if len(o.Env) > 0 {
		body["env"] = o.Env
	}
	var w wireContainer
	if err := cs.c.Call(ctx, http.MethodPost, "/api/v1/containers", nil, body, &w); err != nil {
		return nil, err
	}
	return cs.c.container(w.info()), nil
}

// project is project, or when empty the caller's project when it has
// exactly one.
func (cs Containers) project(ctx context.Context, project string) (string, error) {
	if project != "" {
		return project, nil
	}
	var ids []string
	for p, err := range Pages[struct {
		ID string `json:"id"`
	}](ctx, cs.c, "/api/v1/projects", nil, "projects", 0) {
		if err != nil {
			return "", err
		}
		if ids = append(ids, p.ID); len(ids) > 1 {
			break
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", errors.New("deckhand: CreateOptions.Project: required: the caller has no project (create one first)")
	}
	return "", errors.New("deckhand: CreateOptions.Project: required: the caller has several projects, name one")
}

// imageID resolves an alias to its catalog id (ids pass as given).
func (cs Containers) imageID(ctx context.Context, image string) (string, error) {
	if strings.HasPrefix(image, "img_") {
		return image, nil
	}
	for im, err := range Pages[struct {
		ID    string `json:"id"`
		Alias string `json:"alias"`
	}](ctx, cs.c, "/api/v1/images/public", nil, "images", 0) {
		if err != nil {
			return "", err
		}
		if im.Alias == image {
			return im.ID, nil
		}
	}
	return "", fmt.Errorf("deckhand: image %q: no catalog image has this alias", image)
}

// Get is container id's handle with its record as it is now.
func (cs Containers) Get(ctx context.Context, id string) (*Container, error) {
	w, err := cs.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return cs.c.container(w.info()), nil
}

func (cs Containers) get(ctx context.Context, id string) (wireContainer, error) {
	var w wireContainer
	err := cs.c.Call(ctx, http.MethodGet, "/api/v1/containers/"+url.PathEscape(id), nil, nil, &w)
	return w, err
}

// List is every container of a project, oldest first (project empty:
// the caller's only project).
func (cs Containers) List(ctx context.Context, project string) ([]ContainerInfo, error) {
	project, err := cs.project(ctx, project)
	if err != nil {
		return nil, err
	}
	var out []ContainerInfo
	for w, err := range Pages[wireContainer](ctx, cs.c, "/api/v1/containers", url.Values{"project_id": {project}}, "containers", 0) {
		if err != nil {
			return nil, err
		}
		out = append(out, w.info())
	}
	return out, nil
}

func (cs Containers) act(ctx context.Context, id, verb string) (ContainerInfo, error) {
	var w wireContainer
	err := cs.c.Call(ctx, http.MethodPost, "/api/v1/containers/"+url.PathEscape(id)+"/"+verb, nil, nil, &w)
	return w.info(), err
}

// Start starts a stopped or failed container; the answer comes once its
// agent answers (running) or it failed.
func (cs Containers) Start(ctx context.Context, id string) (ContainerInfo, error) {
	return cs.act(ctx, id, "start")
}

// Stop stops a container (its agent gets 10 s); the workspace stays.
func (cs Containers) Stop(ctx context.Context, id string) (ContainerInfo, error) {
	return cs.act(ctx, id, "stop")
}

// Restart stops and starts a container.
func (cs Containers) Restart(ctx context.Context, id string) (ContainerInfo, error) {
	return cs.act(ctx, id, "restart")
}

// Delete removes a container, its engine objects and its workspace.
func (cs Containers) Delete(ctx context.Context, id string) error {
	return cs.c.Call(ctx, http.MethodDelete, "/api/v1/containers/"+url.PathEscape(id), nil, nil, nil)
}

// WaitRunning polls container id until it is running and answers its
// record; a container that settles failed, stopped or deleting is a
// *StateError, and ctx bounds the wait.
func (cs Containers) WaitRunning(ctx context.Context, id string) (ContainerInfo, error) {
	for n := 1; ; n++ {
		w, err := cs.get(ctx, id)
		if err != nil {
			return ContainerInfo{}, err
		}
		switch w.Status {
		case "running":
			return w.info(), nil
		case "failed", "stopped", "deleting":
			return w.info(), &StateError{ID: id, Status: w.Status, Reason: w.StatusReason, Want: "running"}
		}
		if err := sleepCtx(ctx, min(time.Duration(n)*100*time.Millisecond, time.Second)); err != nil {
			return w.info(), err
		}
	}
}
