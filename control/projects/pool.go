package projects

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"time"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/runtime"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// The warm pool. For a catalog image marked prespawn an admin sets a pool
// size; the control plane keeps that many containers of the image made,
// their agents enrolled and healthy, and frozen (paused). A create of the
// image claims one instead of making a container: the claim is part of the
// create's store transaction (so two creates never take the same one),
// gives the container its record (project, name, the id it was made with)
// and its own agent token, thaws it and answers it running; the pool
// fills again in the background.
//
// A pooled container belongs to no project until a create claims it: its
// record lives in the pool's bucket, not the containers', so no list,
// check, proxy route or event of a project sees it; its agent runs without
// a project id and, with no proxy permissions document for it, admits
// loopback clients only. It is claimed once and never returned: a deleted
// container goes, and the pool makes a new one.
//
// The agent's token. A pooled container starts with a token minted for it
// in the pool (a file only root reads, as every container's). The claim,
// in the create's transaction, drops that token and mints the container's
// own; it then thaws the container and hands the new token to its agent
// over the agent's gateway, sealed under the pool token's hash
// (pool_handoff.go), so from the claim on the pool's token is refused and
// the new one crosses the network between agent and control plane only
// sealed. Keeping the pool's token would leave a credential minted before
// the container had an owner.

// Pool limits.
const (
	// MaxPoolSize is the most containers one image's pool keeps.
	MaxPoolSize = 20
	// poolFillTimeout bounds a pooled container's make → enrolled and
	// healthy.
	poolFillTimeout = 60 * time.Second
	// claimTimeout bounds a claim's thaw → the agent enrolled with its
	// new token; past it the container is made again, cold.
	claimTimeout = 10 * time.Second
)

// Buckets of the pool.
const (
	bucketPool      = "projects_pool"       // member id → poolMember
	bucketPoolSizes = "projects_pool_sizes" // image id → poolSizeRec
)

// Pool member statuses.
const (
	poolFilling = "filling" // being made; not claimable
	poolReady   = "ready"   // enrolled, healthy, paused: claimable
)

// poolMember is a container of the pool: made for no project yet.
type poolMember struct {
	ID        string `json:"id"`
	ImageID   string `json:"image_id"`
	ImageName string `json:"image_name"`
	Status    string `json:"status"`
	// Addr is its agent's address on the engine's network, as it was
	// made (a claim hands the agent its token there).
	Addr string `json:"addr,omitempty"`
	// EnrolledAt is when its agent first authenticated with the pool's
	// token.
	EnrolledAt *time.Time `json:"enrolled_at,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
}

type poolSizeRec struct {
	ImageID   string    `json:"image_id"`
	Size      int       `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
}

// poolTable indexes members by image, oldest first: a claim takes the
// oldest ready one.
var poolTable = store.Declare(bucketPool, []store.Field[poolMember]{
	store.Text("image_id", func(m *poolMember) string { return m.ImageID }),
	store.Time("created_at", func(m *poolMember) time.Time { return m.CreatedAt }),
}, store.Index{Fields: []string{"image_id", "created_at"}, Sort: true})

// poolState is the pool's in-process side: which images a filler works
// on, and which members it is making.
type poolState struct {
	mu      sync.Mutex
	running map[string]bool // image → a filler runs
	again   map[string]bool // image → asked again while it ran
	making  map[string]bool // member id → being made by this process
}

func imageMembers(tx *store.Tx, image string) ([]poolMember, error) {
	return where[poolMember](tx, poolTable, "image_id", image, 0)
}

// poolCapable says whether this control plane's runtime can keep a warm
// pool: it must freeze containers and write a claimed one's token.
func (s *Service) poolCapable() error {
	drv := s.lc.rt.Driver
	if drv == nil {
		return errRecordsOnly
	}
	if _, ok := drv.(runtime.FileWriter); !ok || !drv.Capabilities().Pause {
		return &fault.Error{Code: fault.CodeConflict, Details: "runtime", Field: "size",
			Message: "size: the " + drv.Capabilities().Name + " runtime cannot keep a warm pool (it cannot pause containers); only size 0 is taken"}
	}
	return nil
}

// Pool is the answer of the pool routes.
type Pool struct {
	ImageID string `json:"image_id"`
	// Size is the number of containers the pool keeps.
	Size int `json:"size"`
	// Ready counts the members a create may claim now; Filling those
	// being made.
	Ready   int `json:"ready"`
	Filling int `json:"filling"`
}

// PoolRef names an image's pool by the image's id.
type PoolRef struct {
	ID string `path:"id" doc:"a catalog image id: img_ followed by 24 lower-case hex digits"`
}

// ValidateParams checks the image id's format.
func (r *PoolRef) ValidateParams() error { return catalog.CheckID("image", "img_", r.ID) }

// PoolSizeInput is PUT /api/v1/admin/images/{id}/pool.
type PoolSizeInput struct {
	PoolRef
	Body PoolSizeBody
}

// PoolSizeBody is the body of PUT /api/v1/admin/images/{id}/pool.
type PoolSizeBody struct {
	Size *int `json:"size" required:"true" doc:"containers to keep, 0-20; 0 drains the pool"`
}

// Validate checks the size's range.
func (b *PoolSizeBody) Validate() error {
	if b.Size == nil {
		return fault.Invalid("size", "is required")
	}
	if n := *b.Size; n < 0 || n > MaxPoolSize {
		return fault.Invalid("size", "must be between 0 and %d, got %d", MaxPoolSize, n)
	}
	return nil
}

// GetPool answers image id's pool (admins).
func (s *Service) GetPool(ctx context.Context, ref PoolRef) (*Pool, error) {
	if _, ok, err := s.env.Images.Info(ctx, ref.ID); err != nil {
		return nil, fault.Wrap("read the image", err)
	} else if !ok {
		return nil, fault.NotFound("image", ref.ID)
	}
	return s.poolOf(ctx, ref.ID)
}

func (s *Service) poolOf(ctx context.Context, image string) (*Pool, error) {
	return domain.Transact(ctx, s.db.ViewContext, "read the pool", func(tx *store.Tx) (*Pool, error) {
		var rec poolSizeRec
		if _, err := tx.Get(bucketPoolSizes, image, &rec); err != nil {
			return nil, err
		}
		out := &Pool{ImageID: image, Size: rec.Size}
		ms, err := imageMembers(tx, image)
		for _, m := range ms {
			if m.Status == poolReady {
				out.Ready++
			} else {
				out.Filling++
			}
		}
		return out, err
	})
}

// SetPoolSize sets image id's pool size (admins). A larger size fills in
// the background; a smaller one removes the surplus ready members before
// it answers (a member being made goes once it is made).
func (s *Service) SetPoolSize(ctx context.Context, in PoolSizeInput) (*Pool, error) {
	if err := in.Body.Validate(); err != nil {
		return nil, err
	}
	size, image := *in.Body.Size, in.ID
	info, ok, err := s.env.Images.Info(ctx, image)
	if err != nil {
		return nil, fault.Wrap("read the image", err)
	}
	if !ok {
		return nil, fault.NotFound("image", image)
	}
	if size > 0 {
		if err := s.poolCapable(); err != nil {
			return nil, err
		}
		if !info.Prespawn {
			return nil, &fault.Error{Code: fault.CodeConflict, Field: "size", Details: "prespawn",
				Message: fmt.Sprintf("size: image %s is not marked prespawn: only a prespawn image has a warm pool", image)}
		}
		if info.Name == "" {
			return nil, &fault.Error{Code: fault.CodeConflict, Field: "size", Details: "image_name",
				Message: fmt.Sprintf("size: image %s has no image_name the engine could run", image)}
		}
	}
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var prev poolSizeRec
		if _, err := tx.Get(bucketPoolSizes, image, &prev); err != nil {
			return err
		}
		if size == 0 {
			if err := tx.Delete(bucketPoolSizes, image); err != nil {
				return err
			}
		} else if err := tx.Put(bucketPoolSizes, image, poolSizeRec{ImageID: image, Size: size, UpdatedAt: s.now()}); err != nil {
			return err
		}
		return s.event(tx, ctx, events.Event{EventType: "image.pool_resized", ResourceType: "image", ResourceID: image,
			Payload: events.Payload(map[string]any{"size": size, "previous": prev.Size})})
	})
	if err != nil {
		return nil, fault.Wrap("set the pool size", err)
	}
	if s.lc.rt.Driver != nil {
		s.drainPool(ctx, image, size)
		s.poolKick(image)
	}
	return s.poolOf(ctx, image)
}

// poolTarget is the size image's pool should have now: 0 when the image
// is gone or no longer prespawn.
func (s *Service) poolTarget(ctx context.Context, image string) (int, string, error) {
	info, ok, err := s.env.Images.Info(ctx, image)
	if err != nil || !ok || !info.Prespawn || info.Name == "" || s.poolCapable() != nil {
		return 0, "", err
	}
	var rec poolSizeRec
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		_, err := tx.Get(bucketPoolSizes, image, &rec)
		return err
	})
	return rec.Size, info.Name, err
}

// drainPool removes image's ready members beyond size, newest first.
func (s *Service) drainPool(ctx context.Context, image string, size int) {
	var ms []poolMember
	if err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		ms, err = imageMembers(tx, image)
		return err
	}); err != nil {
		s.log.Warn("warm pool: reading the members failed", "image", image, "err", err)
		return
	}
	for i := len(ms) - 1; i >= 0 && len(ms) > size; i-- {
		if ms[i].Status != poolReady && s.poolMaking(ms[i].ID) {
			continue // its filler removes it once it is made
		}
		s.dropMember(ctx, ms[i].ID)
		ms = append(ms[:i], ms[i+1:]...)
	}
}

// dropMember removes pool member id: its record and token, then its
// engine objects, unless a create claimed it first (its container record
// then holds the id).
func (s *Service) dropMember(ctx context.Context, id string) {
	unlock := s.lc.lock(id)
	defer unlock()
	claimed := false
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		c, err := getContainer(tx, id)
		if err != nil {
			return err
		}
		if claimed = c != nil; claimed {
			return nil
		}
		if err := dropAgentTokens(tx, id); err != nil {
			return err
		}
		return tx.Delete(bucketPool, id)
	})
	if err != nil {
		s.log.Warn("warm pool: removing a member's record failed", "member", id, "err", err)
		return
	}
	if claimed {
		return
	}
	// A failure leaves an engine container no record names: the
	// reconciler removes it.
	if err := s.lc.rt.Driver.Delete(ctx, id, false); err != nil {
		s.log.Warn("warm pool: removing a member from the engine failed", "member", id, "err", err)
	}
}

// poolKick runs image's filler unless it runs; one that runs goes round
// once more.
func (s *Service) poolKick(image string) {
	p := &s.pool
	p.mu.Lock()
	if p.running[image] || s.lc.ctx.Err() != nil {
		p.again[image] = true
		p.mu.Unlock()
		return
	}
	p.running[image] = true
	s.lc.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer s.lc.wg.Done()
		for {
			s.fillPool(s.lc.ctx, image)
			p.mu.Lock()
			if !p.again[image] || s.lc.ctx.Err() != nil {
				delete(p.running, image)
				delete(p.again, image)
				p.mu.Unlock()
				return
			}
			p.again[image] = false
			p.mu.Unlock()
		}
	}()
}

func (s *Service) poolMaking(id string) bool {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	return s.pool.making[id]
}

func (s *Service) setMaking(id string, on bool) {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	if on {
		s.pool.making[id] = true
	} else {
		delete(s.pool.making, id)
	}
}

// fillPool makes image's pool its size: the surplus removed, the missing
// members made one after another.
func (s *Service) fillPool(ctx context.Context, image string) {
	for ctx.Err() == nil {
		size, name, err := s.poolTarget(ctx, image)
		if err != nil {
			s.log.Warn("warm pool: reading the pool's size failed", "image", image, "err", err)
			return
		}
		var n int
		if err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
			ms, err := imageMembers(tx, image)
			n = len(ms)
			return err
		}); err != nil {
			s.log.Warn("warm pool: reading the members failed", "image", image, "err", err)
			return
		}
		if n > size {
			s.drainPool(ctx, image, size)
			return
		}
		if n == size {
			return
		}
		if err := s.makeMember(ctx, image, name); err != nil {
			// The next reconcile pass tries again.
			s.log.Warn("warm pool: making a container failed", "image", image, "err", err)
			return
		}
	}
}

// makeMember makes one container of image's pool and, once its agent has
// enrolled and answers, freezes it and marks it ready.
func (s *Service) makeMember(ctx context.Context, image, name string) error {
	drv := s.lc.rt.Driver
	controlURL, err := s.agentURL(ctx)
	if err != nil {
		return err
	}
	m := poolMember{ID: newID(), ImageID: image, ImageName: name, Status: poolFilling, CreatedAt: s.now()}
	s.setMaking(m.ID, true)
	defer s.setMaking(m.ID, false)
	var token string
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if err := tx.Put(bucketPool, m.ID, m); err != nil {
			return err
		}
		token, err = s.putAgentToken(tx, m.ID, "pool")
		return err
	})
	if err != nil {
		return err
	}
	fail := func(err error) error {
		s.dropMember(context.WithoutCancel(ctx), m.ID)
		return err
	}
	// The record is written before the engine container exists: the
	// reconciler never takes it for one no record names.
	spec := s.spec(&Container{ID: m.ID, ImageName: name}, token, controlURL)
	spec.Pool = image
	unlock := s.lc.lock(m.ID)
	if err = drv.Create(ctx, spec); err == nil {
		err = drv.Start(ctx, m.ID)
	}
	unlock()
	if err != nil {
		return fail(err)
	}
	addr, reason := s.awaitMember(ctx, m.ID, time.Now().Add(poolFillTimeout))
	if reason != "" {
		return fail(fmt.Errorf("%s", reason))
	}
	unlock = s.lc.lock(m.ID)
	kept := false
	if err = drv.Pause(ctx, m.ID); err == nil {
		err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
			var cur poolMember
			ok, err := tx.Get(bucketPool, m.ID, &cur)
			if kept = ok && err == nil; !kept {
				return err // drained meanwhile
			}
			cur.Status, cur.Addr = poolReady, addr
			return tx.Put(bucketPool, m.ID, cur)
		})
	}
	unlock()
	if err != nil || !kept {
		return fail(err)
	}
	return nil
}

// awaitMember waits until pool member id's agent has enrolled and its
// gateway answers: its address then, else the reason it did not.
func (s *Service) awaitMember(ctx context.Context, id string, deadline time.Time) (addr, reason string) {
	for {
		var m *poolMember
		if err := s.db.ViewContext(ctx, func(tx *store.Tx) (err error) {
			m, err = get[poolMember](tx, bucketPool, id)
			return err
		}); err != nil || m == nil {
			return "", "the pool's record of it is gone"
		}
		st, err := s.lc.rt.Driver.Inspect(ctx, id)
		switch {
		case err != nil:
		case st.State == runtime.StateMissing || st.State == runtime.StateExited || st.State == runtime.StateDead:
			return "", "its agent is not running (" + string(st.State) + " " + st.Reason + ")"
		case m.EnrolledAt != nil && st.Addr != "" && s.checkHealth(ctx, st.Addr) == nil:
			return st.Addr, ""
		}
		if time.Now().After(deadline) {
			return "", "its agent did not enrol and answer within " + poolFillTimeout.String()
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return "", "the control plane stopped"
		}
	}
}

// poolEnrolled records that pool member id's agent authenticated (in tx;
// nothing when id is no member).
func (s *Service) poolEnrolled(tx *store.Tx, id string) error {
	var m poolMember
	ok, err := tx.Get(bucketPool, id, &m)
	if err != nil || !ok || m.EnrolledAt != nil {
		return err
	}
	now := s.now()
	m.EnrolledAt = &now
	return tx.Put(bucketPool, id, m)
}

// isPoolMember says whether the pool holds id (the reconciler leaves its
// engine container alone).
func (s *Service) isPoolMember(ctx context.Context, id string) bool {
	ok := false
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		ok = tx.GetRaw(bucketPool, id) != nil
		return nil
	})
	return err != nil || ok // unsure: leave it for the next pass
}

// poolRoutes are the admin routes of the warm pool.
func (s *Service) poolRoutes() []platform.Route {
	admin := []string{"admin"}
	errs := " 400 `id` for a malformed image id; 404 for an unknown image; 403 for a caller who is not an admin."
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/admin/images/{id}/pool", OperationID: "getImagePool", Policy: platform.Admin, Tags: admin,
			Summary:     "The warm pool of an image (admin role required)",
			Description: "`size` is the number of containers the pool keeps, `ready` those a create may claim now, `filling` those being made." + errs,
			Message:     "Pool", Op: platform.Op(s.GetPool)},
		{Method: http.MethodPut, Path: "/api/v1/admin/images/{id}/pool", OperationID: "setImagePool", Policy: platform.Admin, Tags: admin,
			Summary: "Set the warm pool size of a prespawn image (admin role required)",
			Description: "The control plane keeps `size` containers of the image made, their agents enrolled and healthy, and paused, " +
				"belonging to no project: no list, route or event of a project shows them. A create of the image (POST " +
				"/api/v1/containers without snapshot_id, workspace_id, resources, env or autostart) claims the oldest ready one: it " +
				"answers 201 already `running`, with the container's own fresh agent token (the pool's is refused from then on), and " +
				"the pool fills again in the background. A claimed container is never returned to the pool. A larger size fills in " +
				"the background; a smaller one (0 drains the pool) removes the surplus before it answers. 400 `size` when absent, " +
				"negative or above 20; 409 `size` when the image is not marked prespawn or the runtime cannot pause containers " +
				"(--runtime none, kubernetes). Writes `image.pool_resized`." + errs,
			Message: "Pool size set", Op: platform.Op(s.SetPoolSize)},
	}
}

// poolDesc is the create route's words on the warm pool.
const poolDesc = " A create of an image with a warm pool (PUT /api/v1/admin/images/{id}/pool), without `snapshot_id`, " +
	"`workspace_id`, `resources`, `env` or `autostart`, claims one of its ready containers: it answers 201 already `running` " +
	"(`container.creating` then `container.running` are written as for any create), with an agent token minted for it at the " +
	"claim; when the pool has none ready the container is made as above."

// putAgentToken replaces container (or pool member) id's agent tokens
// with a new one, minted by by (in tx), and answers it.
func (s *Service) putAgentToken(tx *store.Tx, id, by string) (string, error) {
	if err := dropAgentTokens(tx, id); err != nil {
		return "", err
	}
	token := AgentTokenPrefix + rand.Text()
	rec := agentTokenRec{ID: newID(), ContainerID: id, Hash: agentTokenHash(token), CreatedAt: s.now(), CreatedBy: by}
	if err := tx.Put(bucketAgentTokens, id+"/"+rec.ID, rec); err != nil {
		return "", err
	}
	return token, tx.PutRaw(bucketAgentHash, rec.Hash, []byte(id+"/"+rec.ID))
}
