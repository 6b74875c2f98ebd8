package projects

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// A container's agent token (agt_...) is the credential its agent syncs
// with: minted by an admin or the project's manager (or owner), bound to
// one container, good only on the routes whose policy takes agents (the
// effective proxy permissions document and the network configuration of
// that container) and answered 401 everywhere else. It acts for no user,
// so a person's role changing or their svc_ token leaking does not move
// it, and the agent no longer carries its owner's svc_ token.
//
// At rest only SHA-256 of the token is kept (the token holds 130 random
// bits, so no slow hash is needed): the hash is the lookup key, and the
// record's copy is compared in constant time. The token is in the create
// answer only; it is never logged or listed.

// AgentTokenPrefix starts every agent token.
const AgentTokenPrefix = "agt_"

// Buckets of agent tokens.
const (
	bucketAgentTokens = "projects_agent_tokens"     // container/token id → record
	bucketAgentHash   = "projects_agent_token_hash" // sha256 hex → container/token id
)

// CheckContainerManage admits an admin, or the owner or a manager of the
// container's project.
const CheckContainerManage = "container.manage"

// CheckContainerAgent admits only the agent token of the container itself.
const CheckContainerAgent = "container.agent"

// agentTokenRec is a stored agent token.
type agentTokenRec struct {
	ID          string    `json:"id"`
	ContainerID string    `json:"container_id"`
	Hash        string    `json:"hash"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
}

// AgentToken is an agent token as listed (never its secret).
type AgentToken struct {
	ID          string    `json:"id"`
	ContainerID string    `json:"container_id"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
}

// NewAgentToken is the create answer: the only place the token appears.
type NewAgentToken struct {
	ID          string    `json:"id"`
	Token       string    `json:"token"`
	ContainerID string    `json:"container_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// AgentTokenList is the list answer.
type AgentTokenList struct {
	Tokens []AgentToken `json:"tokens"`
}

func agentTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// AgentTokenRef names one agent token of a container.
type AgentTokenRef struct {
	ContainerRef
	TokenID string `path:"tokenId" doc:"an agent token id: 1-40 lowercase letters or digits"`
}

// ValidateParams checks the token id's format.
func (r *AgentTokenRef) ValidateParams() error { return validID("tokenId", r.TokenID) }

// AgentTokenCreate is POST /api/v1/containers/{id}/agent-tokens: no
// body, or an empty object.
type AgentTokenCreate struct {
	ContainerRef
	Body *struct{}
}

// CreateAgentToken mints an agent token for container id.
func (s *Service) CreateAgentToken(ctx context.Context, ref AgentTokenCreate) (*NewAgentToken, error) {
	id := ref.ID
	caller, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	token := AgentTokenPrefix + rand.Text()
	rec := agentTokenRec{ID: newID(), ContainerID: id, Hash: agentTokenHash(token), CreatedAt: s.now(), CreatedBy: caller.UserID}
	return domain.Transact(ctx, s.db.UpdateContext, "create the agent token", func(tx *store.Tx) (*NewAgentToken, error) {
		c, err := findContainer(tx, id)
		if err != nil {
			return nil, err
		}
		if err := tx.Put(bucketAgentTokens, id+"/"+rec.ID, rec); err != nil {
			return nil, err
		}
		if err := tx.PutRaw(bucketAgentHash, rec.Hash, []byte(id+"/"+rec.ID)); err != nil {
			return nil, err
		}
		return &NewAgentToken{ID: rec.ID, Token: token, ContainerID: id, CreatedAt: rec.CreatedAt}, s.event(tx, ctx, events.Event{
			EventType: "container.agent_token.created", ResourceType: "agent_token", ResourceID: rec.ID, ProjectID: c.ProjectID, ContainerID: id})
	})
}

// ListAgentTokens lists container id's agent tokens, oldest first.
func (s *Service) ListAgentTokens(ctx context.Context, ref ContainerRef) (*AgentTokenList, error) {
	id := ref.ID
	out := &AgentTokenList{Tokens: []AgentToken{}}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		recs, err := store.Under[agentTokenRec](tx, bucketAgentTokens, id+"/")
		for _, r := range recs {
			out.Tokens = append(out.Tokens, AgentToken{ID: r.ID, ContainerID: r.ContainerID, CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy})
		}
		return err
	})
	if err != nil {
		return nil, fault.Wrap("list the agent tokens", err)
	}
	slices.SortFunc(out.Tokens, func(a, b AgentToken) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeAgentToken deletes one of container id's agent tokens.
func (s *Service) RevokeAgentToken(ctx context.Context, ref AgentTokenRef) error {
	id, tokenID := ref.ID, ref.TokenID
	if err := ref.ValidateParams(); err != nil {
		return err
	}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var r agentTokenRec
		ok, err := tx.Get(bucketAgentTokens, id+"/"+tokenID, &r)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("agent token", tokenID)
		}
		if err := tx.Delete(bucketAgentHash, r.Hash); err != nil {
			return err
		}
		if err := tx.Delete(bucketAgentTokens, id+"/"+tokenID); err != nil {
			return err
		}
		c, err := getContainer(tx, id)
		if err != nil {
			return err
		}
		ev := events.Event{EventType: "container.agent_token.revoked", ResourceType: "agent_token", ResourceID: tokenID, ContainerID: id}
		if c != nil {
			ev.ProjectID = c.ProjectID
		}
		return s.event(tx, ctx, ev)
	})
	return fault.Wrap("revoke the agent token", err)
}

var errBadAgentToken = &fault.Error{Code: fault.CodeUnauthorized, Message: "invalid or revoked agent token"}

// CredentialPrefix is the prefix of the credentials this domain issues
// (domain.CredentialIssuer).
func (s *Service) CredentialPrefix() string { return AgentTokenPrefix }

// ResolveCredential is the principal of an agent token: its container's
// agent (domain.CredentialIssuer). 401 for an unknown or revoked token.
func (s *Service) ResolveCredential(ctx context.Context, token string) (*auth.Principal, error) {
	if !strings.HasPrefix(token, AgentTokenPrefix) || len(token) > 128 {
		return nil, errBadAgentToken
	}
	h := agentTokenHash(token)
	rec, err := domain.Transact(ctx, s.db.ViewContext, "check the agent token", func(tx *store.Tx) (*agentTokenRec, error) {
		key := tx.GetRaw(bucketAgentHash, h)
		if key == nil {
			return nil, errBadAgentToken
		}
		rec, err := get[agentTokenRec](tx, bucketAgentTokens, string(key))
		if err == nil && (rec == nil || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1) {
			err = errBadAgentToken
		}
		return rec, err
	})
	if err != nil {
		return nil, err
	}
	// The token's first use is its agent's enrolment: the lifecycle
	// waits for it before it calls the container running.
	s.noteEnrolled(ctx, rec.ContainerID, rec.ID)
	return &auth.Principal{Kind: auth.KindAgent, TokenID: rec.ID, ContainerID: rec.ContainerID}, nil
}

var (
	errNotThisAgent = &fault.Error{Code: fault.CodeForbidden, Message: "this agent token belongs to another container"}
	errAgentRoute   = &fault.Error{Code: fault.CodeForbidden,
		Message: "this route takes the container's agent token (agt_...), minted with POST /api/v1/containers/{id}/agent-tokens"}
)

// checkAgent admits only the agent token of the container of path id:
// 400 malformed id, 404 unknown container, 403 another container's agent
// or a person.
func (s *Service) checkAgent(ctx context.Context, param func(string) string) error {
	id := param("id")
	if err := validID("id", id); err != nil {
		return err
	}
	caller, err := platform.Caller(ctx)
	if err != nil {
		return err
	}
	if err := s.containerExists(ctx, id); err != nil {
		return err
	}
	if caller.Kind != auth.KindAgent {
		return errAgentRoute
	}
	if caller.ContainerID != id {
		return errNotThisAgent
	}
	return nil
}

// checkAdminOr admits an admin, or a caller with at least need on the
// project of the container of path id (container.manage: need manager).
func (s *Service) checkAdminOr(need level) platform.Check {
	people := s.checkContainer(need)
	return func(ctx context.Context, param func(string) string) error {
		if p, ok := auth.FromContext(ctx); ok && p.IsAdmin() {
			if err := validID("id", param("id")); err != nil {
				return err
			}
			return s.containerExists(ctx, param("id"))
		}
		return people(ctx, param)
	}
}

// containerExists is an access check's 404 when no container has id.
func (s *Service) containerExists(ctx context.Context, id string) error {
	return fault.Wrap("check access", s.db.ViewContext(ctx, func(tx *store.Tx) error {
		_, err := findContainer(tx, id)
		return err
	}))
}
