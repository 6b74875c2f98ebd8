// Package projects owns projects and the people on them, the containers
// registered in them, each container's outbound network configuration and
// the proxy permissions documents of containers and projects
// (docs/spec/interface.md 4.8, 4.9, 4.12 Projects; docs/spec/operations.md admin API, the
// container ownership rule and project-level proxy permissions), and the
// warm pool of paused containers a create of a prespawn image claims
// (pool.go).
//
// Who may do what is declared on the routes as resource checks this
// package provides to every domain (Authz):
//
//   - project.member: the owner or any user a permission names (viewer,
//     operator, manager) — read the project, its stats and its document;
//   - project.manager: the owner or a manager — change the project, its
//     permissions and its proxy permissions document;
//   - project.owner: the owner — delete the project;
//   - container.read: a member of the container's project;
//   - container.access: the owner, an operator or a manager of the
//     container's project — act on the container (network, proxy
//     permissions);
//   - container.operate: an admin, the owner, an operator or a manager —
//     start, stop and restart the container;
//   - container.manage: an admin, the owner or a manager — delete the
//     container, mint and revoke its agent tokens (creating one in a
//     project takes the same roles, checked on the body's project_id);
//   - container.agent: the container's own agent token (agt_) — the
//     effective document and the effective network configuration with
//     their secrets, the agent's network report. An agent token also
//     passes container.read for its own container on the routes that take
//     agents (the network configuration); every other route answers it 401;
//   - container.claim: the container's own agent token, or container.manage
//     — mint the container's claims.
//
// Each check answers in this order, so a caller learns no more about
// another user's resource than the spec requires: 400 for a malformed id
// (no lookup made), 404 when no such project or container exists, 403 when
// it exists and the caller may not act on it. Messages carry only the id
// the caller sent, never the owner, project or name. Sub-resources (a
// network configuration, a document) are looked up only after the check
// passes, so their existence is never revealed to others. Admins get no
// implicit access to users' projects: they create projects and containers
// through the admin API.
package projects

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/signing"
	"deckhand/platform/store"
)

// Config is the projects domain's config section.
type Config struct {
	// Sealer encrypts proxy credentials at rest (the master key). Required.
	Sealer *secrets.Sealer
	// Keys sign container claims (nil: --signing=false, no claims).
	Keys *signing.KeySet
	// Runtime runs the containers (zero: records only, --runtime none).
	Runtime Runtime
}

// Resource checks this package provides.
const (
	CheckProjectMember   = "project.member"
	CheckProjectManager  = "project.manager"
	CheckProjectOwner    = "project.owner"
	CheckContainerRead   = "container.read"
	CheckContainerAccess = "container.access"
	// CheckContainerOperate admits an admin, or the owner, a manager or
	// an operator of the container's project: start, stop, restart.
	CheckContainerOperate = "container.operate"
)

// Buckets this package owns.
const (
	bucketProjects   = "projects"
	bucketPerms      = "projects_permissions"   // project/permission → record
	bucketByMember   = "projects_by_member"     // user/project → permission id
	bucketContainers = "projects_containers"    // container → record
	bucketNetwork    = "projects_network"       // container → configuration
	bucketNetCreds   = "projects_network_creds" // container → sealed userinfo
	bucketDocs       = "projects_proxyperm"     // c/<container> or p/<project> → document
	bucketDocVersion = "projects_proxyperm_versions"
	bucketNetVersion = "projects_network_versions" // container → last version of a deleted configuration
)

// Service is the projects domain.
type Service struct {
	env        domain.Env[Config]
	db         *store.DB
	log        *slog.Logger
	sealer     *secrets.Sealer
	userExists platform.Check
	lc         *lifecycle
	pool       poolState
}

// New builds the domain and provides its resource checks.
func New(env domain.Env[Config]) (*Service, error) {
	if env.Config.Sealer == nil {
		return nil, errNoSealer
	}
	if err := env.Store.DeclareReplacing(context.Background(), Tables, legacyBuckets...); err != nil {
		return nil, fmt.Errorf("projects: %w", err)
	}
	s := &Service{env: env, db: env.Store, log: env.Logger, sealer: env.Config.Sealer, lc: newLifecycle(env.Config.Runtime),
		pool: poolState{running: map[string]bool{}, again: map[string]bool{}, making: map[string]bool{}}}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.bindServers()
	s.userExists = env.Authz.Policy("user.exists", "the named account exists").Check
	env.Authz.Provide(CheckProjectMember, s.checkProject(roleViewer))
	env.Authz.Provide(CheckProjectManager, s.checkProject(roleManager))
	env.Authz.Provide(CheckProjectOwner, s.checkProject(roleOwner))
	env.Authz.Provide(CheckContainerRead, s.checkContainer(roleViewer))
	env.Authz.Provide(CheckContainerAccess, s.checkContainer(roleOperator))
	env.Authz.Provide(CheckContainerManage, s.checkAdminOr(roleManager))
	env.Authz.Provide(CheckContainerOperate, s.checkAdminOr(roleOperator))
	env.Authz.Provide(CheckContainerAgent, s.checkAgent)
	env.Authz.Provide(CheckContainerClaim, s.checkClaim)
	return s, nil
}

var errNoSealer = errors.New("projects: a Sealer (master key) is required")

// Bootstrap seals legacy documents' secrets, then starts the reconciler,
// which first takes every record to the engine's state (a create
// interrupted by a crash resumes).
func (s *Service) Bootstrap(ctx context.Context) error {
	if err := s.sealLegacy(ctx); err != nil {
		return err
	}
	if s.lc.rt.Driver == nil {
		return nil
	}
	s.lc.start.Do(func() {
		s.lc.wg.Add(1)
		go func() {
			defer s.lc.wg.Done()
			s.runReconciler()
		}()
		s.startPool()
	})
	return nil
}

// Close stops the reconciler and the provisioning under way (the next
// start resumes them). The driver is the server's to close.
func (s *Service) Close() error {
	s.lc.stop()
	s.lc.wg.Wait()
	return nil
}

// Ids of projects, containers and permissions: lowercase letters and
// digits only, because a container service's host name joins project and
// container ids with '-' (<project_id>-<container_id>-<service>-...).
var idRe = regexp.MustCompile(`^[a-z0-9]{1,40}$`)

const idRule = "invalid id format: must be 1-40 lowercase letters or digits"

func validID(field, id string) error {
	if !idRe.MatchString(id) {
		return fault.Invalid(field, idRule)
	}
	return nil
}

// newID is 20 random characters of [a-z2-7] (100 bits, unbiased: base32
// of crypto/rand).
func newID() string { return strings.ToLower(rand.Text()[:20]) }

// ProjectRef names a project by its path id (the route's policy checked
// its format and the caller's access first).
type ProjectRef struct {
	ID string `path:"id" doc:"a project id: 1-40 lowercase letters or digits"`
}

// ContainerRef names a container by its path id (the route's policy
// checked its format and the caller's access first).
type ContainerRef struct {
	ID string `path:"id" doc:"a container id: 1-40 lowercase letters or digits"`
}

// PageInput is a list's page and page size.
type PageInput struct {
	Page  int `query:"page" default:"1" minimum:"1" maximum:"2147483647" doc:"page number, from 1"`
	Limit int `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"page size, 1-100 (default 20); a larger value is refused with 400, not clamped"`
}
