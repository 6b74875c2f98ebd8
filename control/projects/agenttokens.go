package projects

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
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

func (s *Service) agentTokenRoutes() []platform.Route {
	manage := s.env.Authz.Policy(CheckContainerManage, "an admin, or the owner or a manager of the container's project")
	tag := []string{"container agent tokens"}
	errs := " 400 for a malformed container id; 404 for an unknown container; 403 when the caller may not manage it."
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/agent-tokens", Policy: manage, Tags: tag, Status: http.StatusCreated,
			Summary: "Mint an agent token for the container (the token is shown only here)",
			Description: "Answers 201 `{id, token, container_id, created_at}`; `token` starts with `agt_` and is not shown again. " +
				"The container's agent takes it with `--token`. It is good only for that container's agent routes (the effective " +
				"proxy permissions document and the network configuration); every other route answers it 401, another container's " +
				"403. Stored as its SHA-256 only. Rotation: mint a new token, restart the agent with it, revoke the old one. " +
				"The body is empty (or `{}`). Writes `container.agent_token.created`." + errs,
			Response: NewAgentToken{}, Handler: s.handleCreateAgentToken},
		{Method: http.MethodGet, Path: "/api/v1/containers/{id}/agent-tokens", Policy: manage, Tags: tag,
			Summary:     "The container's agent tokens (never their secrets), oldest first",
			Description: "Each `{id, container_id, created_at, created_by}`." + errs,
			Response:    AgentTokenList{}, Handler: s.handleListAgentTokens},
		{Method: http.MethodDelete, Path: "/api/v1/containers/{id}/agent-tokens/{tokenId}", Policy: manage, Tags: tag,
			Summary: "Revoke an agent token",
			Description: "The agent using it is answered 401 from the next request on. 404 when the container has no such token. " +
				"Writes `container.agent_token.revoked`." + errs,
			Handler: s.handleRevokeAgentToken},
	}
}

// CreateAgentToken mints an agent token for container id.
func (s *Service) CreateAgentToken(ctx context.Context, id string) (*NewAgentToken, error) {
	caller, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	token := AgentTokenPrefix + rand.Text()
	rec := agentTokenRec{ID: newID(), ContainerID: id, Hash: agentTokenHash(token), CreatedAt: s.now(), CreatedBy: caller.UserID}
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		c, err := getContainer(tx, id)
		if err != nil {
			return err
		}
		if c == nil {
			return platform.NotFound("container", id)
		}
		if err := tx.Put(bucketAgentTokens, id+"/"+rec.ID, rec); err != nil {
			return err
		}
		if err := tx.PutRaw(bucketAgentHash, rec.Hash, []byte(id+"/"+rec.ID)); err != nil {
			return err
		}
		return s.event(tx, ctx, events.Event{EventType: "container.agent_token.created", ResourceType: "agent_token",
			ResourceID: rec.ID, ProjectID: c.ProjectID, ContainerID: id})
	})
	if err != nil {
		return nil, storeErr("create the agent token", err)
	}
	return &NewAgentToken{ID: rec.ID, Token: token, ContainerID: id, CreatedAt: rec.CreatedAt}, nil
}

func (s *Service) handleCreateAgentToken(c fiber.Ctx) error {
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		var none struct{}
		if err := platform.DecodeBytes(c.Body(), &none); err != nil {
			return err
		}
	}
	v, err := s.CreateAgentToken(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusCreated, "Agent token created: store it now, it is not shown again", v)
}

// ListAgentTokens lists container id's agent tokens, oldest first.
func (s *Service) ListAgentTokens(ctx context.Context, id string) (*AgentTokenList, error) {
	out := &AgentTokenList{Tokens: []AgentToken{}}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		return tx.ForEachPrefix(bucketAgentTokens, id+"/", func(_ string, raw []byte) error {
			var r agentTokenRec
			if err := json.Unmarshal(raw, &r); err != nil {
				return err
			}
			out.Tokens = append(out.Tokens, AgentToken{ID: r.ID, ContainerID: r.ContainerID, CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy})
			return nil
		})
	})
	if err != nil {
		return nil, storeErr("list the agent tokens", err)
	}
	slices.SortFunc(out.Tokens, func(a, b AgentToken) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s *Service) handleListAgentTokens(c fiber.Ctx) error {
	v, err := s.ListAgentTokens(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Agent tokens", v)
}

// RevokeAgentToken deletes one of container id's agent tokens.
func (s *Service) RevokeAgentToken(ctx context.Context, id, tokenID string) error {
	if err := validID("tokenId", tokenID); err != nil {
		return err
	}
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var r agentTokenRec
		ok, err := tx.Get(bucketAgentTokens, id+"/"+tokenID, &r)
		if err != nil {
			return err
		}
		if !ok {
			return platform.NotFound("agent token", tokenID)
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
	return storeErr("revoke the agent token", err)
}

func (s *Service) handleRevokeAgentToken(c fiber.Ctx) error {
	if err := s.RevokeAgentToken(c.Context(), c.Params("id"), c.Params("tokenId")); err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Agent token revoked", nil)
}

var errBadAgentToken = &platform.Error{Code: platform.CodeUnauthorized, Message: "invalid or revoked agent token"}

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
	var rec agentTokenRec
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		key := tx.GetRaw(bucketAgentHash, h)
		if key == nil {
			return errBadAgentToken
		}
		ok, err := tx.Get(bucketAgentTokens, string(key), &rec)
		if err != nil {
			return err
		}
		if !ok || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1 {
			return errBadAgentToken
		}
		return nil
	})
	if err != nil {
		return nil, storeErr("check the agent token", err)
	}
	return &auth.Principal{Kind: auth.KindAgent, TokenID: rec.ID, ContainerID: rec.ContainerID}, nil
}

var (
	errNotThisAgent = &platform.Error{Code: platform.CodeForbidden, Message: "this agent token belongs to another container"}
	errAgentRoute   = &platform.Error{Code: platform.CodeForbidden,
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
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		c, err := getContainer(tx, id)
		if err != nil {
			return err
		}
		if c == nil {
			return platform.NotFound("container", id)
		}
		return nil
	})
	if err != nil {
		return storeErr("check access", err)
	}
	if caller.Kind != auth.KindAgent {
		return errAgentRoute
	}
	if caller.ContainerID != id {
		return errNotThisAgent
	}
	return nil
}

// checkManage admits an admin, or a manager or the owner of the project of
// the container of path id.
func (s *Service) checkManage(ctx context.Context, param func(string) string) error {
	if p, ok := auth.FromContext(ctx); ok && p.IsAdmin() {
		if err := validID("id", param("id")); err != nil {
			return err
		}
		return storeErr("check access", s.db.ViewContext(ctx, func(tx *store.Tx) error {
			c, err := getContainer(tx, param("id"))
			if err == nil && c == nil {
				err = platform.NotFound("container", param("id"))
			}
			return err
		}))
	}
	return s.checkContainer(roleManager)(ctx, param)
}
