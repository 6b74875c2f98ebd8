package projects

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/runtime"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Servers that run containers. With Runtime.Servers set, the runtime's
// Driver routes each call to the server a container's record names, a
// new container is placed on a server when it is created (its record
// keeps the server's id in server_id, and its URLs carry that server's
// name), and an admin may move a stopped container's workspace to
// another server, of either driver. Without it, every container runs on
// the local engine (--runtime), so a single machine needs no server
// records.

// Servers is the fleet of servers with endpoints (control/fleet).
type Servers interface {
	// Bind tells the fleet how to find a container's server.
	Bind(locate func(ctx context.Context, id string) (server string, found bool, err error))
	// Place picks the servers of n new containers (in tx); "" is the
	// local engine. pinned: they must go to pin.
	Place(tx *store.Tx, now time.Time, owner string, usage map[string]int, n int, pin string, pinned bool) ([]string, error)
	// Holder is the server holding workspace ws, or image.
	Holder(ctx context.Context, ws, image string) (server string, found bool)
	// Name is a server's name in URLs; false when it has no endpoint.
	Name(ctx context.Context, server string) (string, bool)
	// CheckMove refuses a move the target cannot take (in tx).
	CheckMove(tx *store.Tx, from, to string, usage map[string]int) error
	// MoveWorkspace copies a workspace from one server to another.
	MoveWorkspace(ctx context.Context, ws, project, image, from, to string) error
	// Remove deletes what a server holds of a container.
	Remove(ctx context.Context, server, id string) error
	// CapabilitiesOf is what a server's engine can do ("": the local
	// engine's).
	CapabilitiesOf(ctx context.Context, server string) (runtime.Capabilities, error)
}

// onServer is the runtime for a container on a server: the fleet's
// calls, with the capabilities of that server's engine, so a pause of a
// container on a Kubernetes server is refused by Kubernetes' rule though
// the local engine pauses. Only the Driver's methods pass (callers that
// look for an optional interface ask s.lc.rt.Driver).
type onServer struct {
	runtime.Driver
	caps runtime.Capabilities
}

func (o onServer) Capabilities() runtime.Capabilities { return o.caps }

// serverEngine is the runtime for container c: the fleet answering the
// capabilities of c's server. A server the fleet cannot find (no endpoint
// any more) leaves the fleet's own, and its calls answer why.
func (s *Service) serverEngine(c *Container) runtime.Driver {
	drv, fl := s.lc.rt.Driver, s.lc.rt.Servers
	if fl == nil || c.ServerID == "" {
		return drv
	}
	caps, err := fl.CapabilitiesOf(s.lc.ctx, c.ServerID)
	if err != nil {
		return drv
	}
	return onServer{Driver: drv, caps: caps}
}

// bindServers hands the fleet the records' servers.
func (s *Service) bindServers() {
	if s.lc.rt.Servers != nil {
		s.lc.rt.Servers.Bind(s.locate)
	}
}

// locate is the server container id's record names.
func (s *Service) locate(ctx context.Context, id string) (string, bool, error) {
	c, err := s.loadContainer(ctx, id)
	if err != nil || c == nil {
		return "", false, err
	}
	return c.ServerID, true, nil
}

// serverName is the server name in c's service URLs: its server's name,
// else (a registered container's opaque server id) the id as recorded,
// else the local engine's.
func (s *Service) serverName(c *Container) string {
	if c.ServerID == "" {
		return s.lc.rt.ServerName
	}
	if fl := s.lc.rt.Servers; fl != nil {
		if n, ok := fl.Name(s.lc.ctx, c.ServerID); ok {
			return n
		}
	}
	return c.ServerID
}

// serverUsage counts the containers each server holds (in tx).
func serverUsage(tx *store.Tx) (map[string]int, error) {
	usage := map[string]int{}
	err := tx.ForEach(bucketContainers, func(_ string, raw []byte) error {
		var c struct {
			ServerID string `json:"server_id"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return err
		}
		if c.ServerID != "" {
			usage[c.ServerID]++
		}
		return nil
	})
	return usage, err
}

// placePin is the server a create must go to, found before its
// transaction: the one holding the kept workspace or the snapshot's image
// it is made from.
type placePin struct {
	server string
	pinned bool
}

func (s *Service) pinFor(ctx context.Context, in ContainerCreate, snap *Snapshot) placePin {
	fl := s.lc.rt.Servers
	if fl == nil {
		return placePin{}
	}
	switch {
	case in.WorkspaceID != "":
		srv, ok := fl.Holder(ctx, in.WorkspaceID, "")
		return placePin{srv, ok}
	case snap != nil:
		if c, err := s.loadContainer(ctx, snap.ContainerID); err == nil && c != nil {
			return placePin{c.ServerID, true}
		}
		srv, ok := fl.Holder(ctx, "", snap.ImageName)
		return placePin{srv, ok}
	}
	return placePin{}
}

// placeContainers sets the server of each new container of project (in
// the create's transaction, so two creates never fill one place).
func (s *Service) placeContainers(tx *store.Tx, projectID string, out []*Container, pin placePin) error {
	fl := s.lc.rt.Servers
	if fl == nil {
		return nil
	}
	p, err := getProject(tx, projectID)
	if err != nil || p == nil {
		return err
	}
	usage, err := serverUsage(tx)
	if err != nil {
		return err
	}
	ids, err := fl.Place(tx, s.now(), p.OwnerID, usage, len(out), pin.server, pin.pinned)
	if err != nil {
		return err
	}
	for i, c := range out {
		c.ServerID = ids[i]
	}
	return nil
}

// unclaimed are the containers of out the warm pool gave no engine
// container: the pool is kept on the local engine, so a claimed one runs
// there and is not placed.
func (c *poolClaim) unclaimed(out []*Container) []*Container {
	if c == nil {
		return out
	}
	var rest []*Container
	for _, o := range out {
		if _, ok := c.taken[o.ID]; !ok {
			rest = append(rest, o)
		}
	}
	return rest
}

// ContainerMove is POST /api/v1/admin/containers/{id}/move.
type ContainerMove struct {
	ContainerRef
	Body struct {
		ServerID string `json:"server_id" required:"true" doc:"the server to move to: one with an endpoint (Docker or Kubernetes, whatever the container's server runs), not draining, with room"`
	}
}

// MoveContainer moves a stopped container to another server (admin
// only): its workspace is copied through the two engines' APIs, the
// record names the new server, and what the old server held of it is
// removed. Its next start makes its engine container on the new server.
func (s *Service) MoveContainer(ctx context.Context, in ContainerMove) (*Container, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	to := in.Body.ServerID
	if to == "" {
		return nil, fault.Invalid("server_id", "is required")
	}
	if !serverIDRe.MatchString(to) {
		return nil, fault.Invalid("server_id", "must be 1-64 letters, digits, '_' or '-'")
	}
	fl := s.lc.rt.Servers
	if fl == nil || s.lc.rt.Driver == nil {
		return nil, errRecordsOnly
	}
	c, _, unlock, err := s.locked(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c.ImageName == "" {
		return nil, errRegistered
	}
	if c.Status != StatusStopped && c.Status != StatusFailed {
		return nil, &fault.Error{Code: fault.CodeConflict, Details: "status",
			Message: "container " + c.ID + " is " + c.Status + ": stop it before moving it"}
	}
	from := c.ServerID
	if err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		usage, err := serverUsage(tx)
		if err != nil {
			return err
		}
		return fl.CheckMove(tx, from, to, usage)
	}); err != nil {
		return nil, fault.Wrap("check the move", err)
	}
	ws := c.WorkspaceID
	if ws == "" {
		ws = c.ID
	}
	// The stopped engine container stays until the record names the
	// target: the copy is of a workspace no program writes to.
	if err := fl.MoveWorkspace(ctx, ws, c.ProjectID, c.ImageName, from, to); err != nil {
		return nil, moveErr(err, c.ImageName)
	}
	out, err := domain.Transact(ctx, s.db.UpdateContext, "record the move", func(tx *store.Tx) (*Container, error) {
		cur, err := findContainer(tx, c.ID)
		if err != nil {
			return nil, err
		}
		cur.ServerID, cur.AgentAddr, cur.Recreate, cur.UpdatedAt = to, "", false, s.now()
		if err := tx.Put(bucketContainers, cur.ID, cur); err != nil {
			return nil, err
		}
		return cur, s.event(tx, ctx, events.Event{EventType: "container.moved", ResourceType: "container", ResourceID: cur.ID, ActorID: p.UserID,
			ProjectID: cur.ProjectID, ContainerID: cur.ID, Payload: events.Payload(map[string]any{"from": from, "to": to})})
	})
	if err != nil {
		return nil, err
	}
	// What the old server held goes once the record names the new one:
	// a failure here leaves labelled objects, never a lost workspace.
	if err := fl.Remove(ctx, from, c.ID); err != nil {
		s.log.Warn("container move: removing it from the old server", "container", c.ID, "server", from, "err", err)
	}
	if c.WorkspaceID != "" {
		if err := fl.Remove(ctx, from, c.WorkspaceID); err != nil {
			s.log.Warn("container move: removing the workspace from the old server", "container", c.ID, "server", from, "err", err)
		}
	}
	return s.decorate(out), nil
}

// moveErr answers a failed copy: an engine without the container's image
// (which the copy's helpers are made of) or one that cannot copy is the
// caller's to fix (409); the rest is the engine's.
func moveErr(err error, image string) error {
	switch {
	case errors.Is(err, runtime.ErrImageMissing):
		return &fault.Error{Code: fault.CodeConflict, Field: "server_id", Details: "image",
			Message: "server_id: an engine of the move does not hold the container's image " + image + ", which the copy and the container need: load it there first"}
	case errors.Is(err, runtime.ErrNotSupported):
		return &fault.Error{Code: fault.CodeConflict, Field: "server_id", Details: "server_id", Message: "server_id: " + err.Error()}
	}
	return engineErr("copy the workspace", err)
}

// serverRoutes are the routes of servers that run containers.
func (s *Service) serverRoutes() []platform.Route {
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/admin/containers/{id}/move", OperationID: "moveContainer", Policy: platform.Admin, Tags: []string{"admin"},
			Summary: "Move a stopped container to another server (admin)",
			Description: "Copies the container's workspace as a tar stream through the engines' APIs to `server_id` (a server with an " +
				"endpoint, not draining, with room; Docker volumes and Kubernetes claims move in any pair), records the new server and " +
				"removes what the old one held (engine container or Pod, Service, Secret, volume or claim). The next start makes the " +
				"container there; its URLs then carry the new server's name. 409 while it is not stopped or failed, for a container " +
				"registered without an image, for a target that is draining, full or the container's own server, for a source server " +
				"without an endpoint, and when an engine lacks the container's image; 404 `server_id` for a server without an endpoint.",
			Message: "Container moved", Op: platform.Op(s.MoveContainer)},
	}
}
