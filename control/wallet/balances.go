package wallet

import (
	"context"
	"net/http"
	"time"

	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Balances is GET /api/v1/wallet/balances.
type Balances struct {
	GeneralBalance money.Amount `json:"general_balance"`
	AILimit        money.Amount `json:"ai_limit"`
	AIUsage        money.Amount `json:"ai_usage"`
	AIRemaining    money.Amount `json:"ai_remaining"`
	AIUsageStatus  string       `json:"ai_usage_status" doc:"live: usage as the AI side reports it now; stale: the AI provider did not answer, usage is the last known"`
}

// GeneralRow is GET /api/v1/wallet/balances/general.
type GeneralRow struct {
	ID             string       `json:"id"`
	UserID         string       `json:"user_id"`
	GeneralBalance money.Amount `json:"general_balance"`
	CreatedAt      time.Time    `json:"created_at"`
	UpdatedAt      time.Time    `json:"updated_at"`
}

// AIBalance is GET /api/v1/wallet/balances/ai.
type AIBalance struct {
	AILimit     money.Amount `json:"ai_limit"`
	AIUsage     money.Amount `json:"ai_usage"`
	AIRemaining money.Amount `json:"ai_remaining"`
}

func (s *Service) balanceRoutes() []platform.Route {
	tag := []string{"wallet"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/wallet/balances", Policy: platform.SignedIn, Tags: tag,
			Summary: "The caller's general balance, AI limit, usage and remaining, with the usage's freshness",
			Description: "Amounts are decimal strings. A user who never had money reads zeros. With the embedded AI-credit side " +
				"(the default) usage is kept in the store and `ai_usage_status` is `live`.",
			OperationID: "getBalances", Message: "Balances", Op: platform.ReadOp(s.Balances)},
		{Method: http.MethodGet, Path: "/api/v1/wallet/balances/general", Policy: platform.SignedIn, Tags: tag,
			OperationID: "getGeneralBalance", Summary: "The caller's general balance row", Message: "General balance", Op: platform.ReadOp(s.General)},
		{Method: http.MethodGet, Path: "/api/v1/wallet/balances/ai", Policy: platform.SignedIn, Tags: tag,
			OperationID: "getAIBalance", Summary: "The caller's AI limit, usage and remaining", Message: "AI balance", Op: platform.ReadOp(s.AI)},
	}
}

func (s *Service) readAccount(ctx context.Context) (*account, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var a *account
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		a, err = loadAccount(tx, p.UserID, s.now())
		return err
	})
	if err != nil {
		return nil, fault.Internal("read the balance", err)
	}
	return a, nil
}

// usage asks the AI side (when outward) for the key's usage.
func (s *Service) usage(ctx context.Context, a *account) (money.Amount, string) {
	if s.ai == nil || a.AIKeyID == "" {
		return a.AIUsage, "live"
	}
	u, err := s.ai.Usage(ctx, a.UserID, a.AIKeyID)
	if err != nil {
		return a.AIUsage, "stale"
	}
	return u, "live"
}

// Balances answers the caller's aggregate balances.
func (s *Service) Balances(ctx context.Context) (*Balances, error) {
	a, err := s.readAccount(ctx)
	if err != nil {
		return nil, err
	}
	u, status := s.usage(ctx, a)
	return &Balances{GeneralBalance: a.General, AILimit: a.AILimit, AIUsage: u, AIRemaining: a.AILimit - u, AIUsageStatus: status}, nil
}

// General answers the caller's general balance row.
func (s *Service) General(ctx context.Context) (*GeneralRow, error) {
	a, err := s.readAccount(ctx)
	if err != nil {
		return nil, err
	}
	return &GeneralRow{ID: a.ID, UserID: a.UserID, GeneralBalance: a.General, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}, nil
}

// AI answers the caller's AI triplet.
func (s *Service) AI(ctx context.Context) (*AIBalance, error) {
	a, err := s.readAccount(ctx)
	if err != nil {
		return nil, err
	}
	u, _ := s.usage(ctx, a)
	return &AIBalance{AILimit: a.AILimit, AIUsage: u, AIRemaining: a.AILimit - u}, nil
}
