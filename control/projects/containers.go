package projects

import (
	"context"
	"regexp"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// serverIDRe: server ids belong to the servers domain; any opaque id of
// this shape is recorded as given.
var serverIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Container is a container registered in a project.
type Container struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	Name      string `json:"name"`
	ServerID  string `json:"server_id,omitempty"`
	// ImageID is the catalog image it runs; ImageName the engine's
	// reference it resolved to at create.
	ImageID   string            `json:"image_id,omitempty"`
	ImageName string            `json:"image_name,omitempty"`
	Resources Resources         `json:"resources"`
	Autostart bool              `json:"autostart"`
	Env       map[string]string `json:"env,omitempty"`
	// Status is a lifecycle state named by the event kinds (creating,
	// running, paused, stopped, failed, deleting); StatusReason says why
	// a container is failed (or why a delete waits) in words a person
	// can act on.
	Status       string `json:"status"`
	StatusReason string `json:"status_reason,omitempty"`
	// AgentAddr is where the control plane reaches the container's agent
	// (its gateway on the engine's network), while running.
	AgentAddr string `json:"agent_addr,omitempty"`
	// EnrolledAt is when the agent first authenticated with its token.
	EnrolledAt *time.Time `json:"enrolled_at,omitempty"`
	// SnapshotID is the snapshot it was made or last restored from.
	SnapshotID string `json:"snapshot_id,omitempty"`
	// WorkspaceID is the kept workspace mounted as its home (empty: its
	// own).
	WorkspaceID string `json:"workspace_id,omitempty"`
	// IdleTimeoutSeconds and IdleAction: see idle.go (0: never idle-stopped).
	IdleTimeoutSeconds int    `json:"idle_timeout_seconds,omitempty"`
	IdleAction         string `json:"idle_action,omitempty"`
	// RunningSince is when it last became running: idleness counts from
	// it at the latest, so a resume is never taken for the idle time
	// before it.
	RunningSince *time.Time `json:"running_since,omitempty"`
	// KeepWorkspace is the delete's choice, kept while it is under way.
	KeepWorkspace bool `json:"keep_workspace,omitempty"`
	// Recreate: limits or autostart changed while it was stopped; the
	// next start makes the engine container again from the record.
	Recreate bool `json:"recreate_on_start,omitempty"`
	// Runtime (docker, none) and URLs (service → its URL) are filled in
	// each answer, not stored.
	Runtime   string            `json:"runtime,omitempty"`
	URLs      map[string]string `json:"urls,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// Stats is the answer of GET /api/v1/projects/{id}/stats.
type Stats struct {
	ProjectID string `json:"project_id"`
	// Containers counts the project's containers, ByStatus by lifecycle state.
	Containers int            `json:"containers"`
	ByStatus   map[string]int `json:"containers_by_status"`
	// Members counts the users with access: the owner plus permissions.
	Members     int            `json:"members"`
	ByRole      map[string]int `json:"members_by_role"`
	Networks    int            `json:"networks_configured"`
	NetsRunning int            `json:"networks_running"`
	// ProxyDocuments counts proxy permissions documents: the project's own
	// and its containers'.
	ProxyDocuments int `json:"proxy_permissions_documents"`
}

// AdminContainerInput is the body of POST /api/v1/admin/containers.
type AdminContainerInput struct {
	ProjectID string `json:"project_id" required:"true"`
	Name      string `json:"name" required:"true"`
	ServerID  string `json:"server_id,omitempty"`
	ID        string `json:"id,omitempty"`
}

// Validate checks the ids' format and the name.
func (in *AdminContainerInput) Validate() error {
	if in.ProjectID == "" {
		return fault.Invalid("project_id", "is required")
	}
	if err := validID("project_id", in.ProjectID); err != nil {
		return err
	}
	if err := cleanName("name", &in.Name); err != nil {
		return err
	}
	if in.ServerID != "" && !serverIDRe.MatchString(in.ServerID) {
		return fault.Invalid("server_id", "must be 1-64 letters, digits, '_' or '-'")
	}
	if in.ID != "" {
		return validID("id", in.ID)
	}
	return nil
}

// AdminCreateContainer registers a container (admins only).
func (s *Service) AdminCreateContainer(ctx context.Context, in AdminContainerInput) (*Container, error) {
	if _, err := platform.AdminCaller(ctx); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	id := in.ID
	if id == "" {
		id = newID()
	}
	now := s.now()
	c := &Container{ID: id, ProjectID: in.ProjectID, Name: in.Name, ServerID: in.ServerID, Status: "creating", CreatedAt: now, UpdatedAt: now}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		p, err := getProject(tx, in.ProjectID)
		if err != nil {
			return err
		}
		if p == nil {
			return fault.Invalid("project_id", "no project has this id")
		}
		if tx.GetRaw(bucketContainers, id) != nil {
			return fault.Errorf(fault.CodeConflict, "a container with id %q exists", id)
		}
		if err := tx.Put(bucketContainers, id, c); err != nil {
			return err
		}
		return s.event(tx, ctx, events.Event{EventType: "container.creating", ResourceType: "container", ResourceID: id,
			ProjectID: in.ProjectID, ContainerID: id, Payload: events.Payload(map[string]any{"name": c.Name, "server_id": c.ServerID})})
	})
	if err != nil {
		return nil, fault.Wrap("create the container", err)
	}
	return s.decorate(c), nil
}

// ContainerList is the answer of GET /api/v1/projects/{id}/containers.
type ContainerList struct {
	Containers []Container `json:"containers"`
	Pagination Pagination  `json:"pagination"`
}

// ContainerListInput is GET /api/v1/projects/{id}/containers.
type ContainerListInput struct {
	ProjectRef
	PageInput
}

// ListContainers lists project id's containers, oldest first.
func (s *Service) ListContainers(ctx context.Context, in ContainerListInput) (*ContainerList, error) {
	id, page, limit := in.ID, in.Page, in.Limit
	if err := checkPage(page, limit); err != nil {
		return nil, err
	}
	pg, err := domain.Transact(ctx, s.db.ViewContext, "list containers", func(tx *store.Tx) (store.Page[Container], error) {
		return store.PageOf[Container](tx, containerTable, store.Query{Filters: []store.Filter{store.Where("project_id", store.Eq, id)},
			Sort: []string{"created_at"}, Offset: (page - 1) * limit, Limit: limit})
	})
	if err != nil {
		return nil, err
	}
	for i := range pg.Items {
		pg.Items[i] = *s.decorate(&pg.Items[i])
	}
	return &ContainerList{Containers: pg.Items, Pagination: Pagination(domain.Paginate(pg.Total, page, limit))}, nil
}

// GetContainer is one container (the route's policy admitted the caller).
func (s *Service) GetContainer(ctx context.Context, ref ContainerRef) (*Container, error) {
	c, err := s.current(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	return s.decorate(c), nil
}

// ProjectStats counts project id's containers, people and configuration.
func (s *Service) ProjectStats(ctx context.Context, ref ProjectRef) (*Stats, error) {
	id := ref.ID
	return domain.Transact(ctx, s.db.ViewContext, "count the project", func(tx *store.Tx) (*Stats, error) {
		st := &Stats{ProjectID: id, ByStatus: map[string]int{}, ByRole: map[string]int{"owner": 1}, Members: 1}
		if _, err := findProject(tx, id); err != nil {
			return nil, err
		}
		if tx.GetRaw(bucketDocs, projectDocKey(id)) != nil {
			st.ProxyDocuments++
		}
		cs, err := projectContainers(tx, id, 0)
		if err != nil {
			return nil, err
		}
		cids, docKeys := make([]string, len(cs)), make([]string, len(cs))
		for i, c := range cs {
			cids[i], docKeys[i] = c.ID, containerDocKey(c.ID)
		}
		nets, err := store.GetMany[networkRec](tx, bucketNetwork, cids)
		if err != nil {
			return nil, err
		}
		docs, err := tx.GetRawMany(bucketDocs, docKeys)
		if err != nil {
			return nil, err
		}
		for i, c := range cs {
			st.Containers++
			st.ByStatus[c.Status]++
			if n := nets[i]; n != nil {
				st.Networks++
				if n.Status == netRunning {
					st.NetsRunning++
				}
			}
			if docs[i] != nil {
				st.ProxyDocuments++
			}
		}
		perms, err := store.Under[Permission](tx, bucketPerms, id+"/")
		for _, p := range perms {
			st.Members++
			st.ByRole[p.Role]++
		}
		return st, err
	})
}

// ContainerQuery is GET /api/v1/containers?project_id=.
type ContainerQuery struct {
	ProjectID string `query:"project_id" doc:"the project whose containers to list (required)"`
	PageInput
}

// QueryContainers lists a project's containers for a member of it (an
// admin: any project); a project the caller is no member of answers 404,
// as an unknown one.
func (s *Service) QueryContainers(ctx context.Context, in ContainerQuery) (*ContainerList, error) {
	caller, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if in.ProjectID == "" {
		return nil, fault.Invalid("project_id", "is required")
	}
	if err := validID("project_id", in.ProjectID); err != nil {
		return nil, err
	}
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		_, err := visibleProject(tx, in.ProjectID, caller)
		return err
	})
	if err != nil {
		return nil, fault.Wrap("read the project", err)
	}
	return s.ListContainers(ctx, ContainerListInput{ProjectRef: ProjectRef{ID: in.ProjectID}, PageInput: in.PageInput})
}
