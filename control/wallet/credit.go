package wallet

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// CreditInput is the body of POST /api/v1/admin/wallet/credit.
type CreditInput struct {
	UserID string `json:"user_id" required:"true"`
	Amount string `json:"amount" required:"true" pattern:"^[0-9]+(\\.[0-9]{1,2})?$" doc:"decimal string, up to 2 decimals, at least 0.01"`
	Reason string `json:"reason" required:"true" doc:"1-500 characters, shown on the transaction and its invoice"`

	amount money.Amount
}

// Validate checks the user id, amount and reason.
func (in *CreditInput) Validate() error {
	if strings.TrimSpace(in.UserID) == "" || len(in.UserID) > 200 || strings.ContainsAny(in.UserID, "/\x00") {
		return fault.Invalid("user_id", "is required: the id of an existing user")
	}
	a, err := parseAmount("amount", in.Amount)
	if err != nil {
		return err
	}
	in.amount = a
	in.Reason = strings.TrimSpace(in.Reason)
	if n := utf8.RuneCountInString(in.Reason); n == 0 || n > 500 {
		return fault.Invalid("reason", "must be 1 to 500 characters")
	}
	return nil
}

// CreditResult answers an operator's credit.
type CreditResult struct {
	Transaction    *Transaction `json:"transaction"`
	GeneralBalance money.Amount `json:"general_balance"`
}

func (s *Service) adminRoutes() []platform.Route {
	return []platform.Route{{
		Method: http.MethodPost, Path: "/api/v1/admin/wallet/credit", Policy: platform.Admin, Tags: []string{"admin"},
		Summary:     "Credit a user's general balance (admin role required)",
		Description: "Writes a completed `credit` transaction (money entering from outside) and `wallet.credited`. The user must exist (404 otherwise).",
		OperationID: "creditBalance", Message: "Balance credited", Op: platform.Op(s.Credit),
	}}
}

// checkUserExists is the identity domain's resource check for an account
// id: a credit to an id nobody has would create money no one can reach.
// Accounts are never deleted, so a check before the transaction holds.
const checkUserExists = "user.exists"

// Credit adds in.Amount to a user's general balance.
func (s *Service) Credit(ctx context.Context, in CreditInput) (*CreditResult, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := s.userExists(ctx, func(string) string { return in.UserID }); err != nil {
		return nil, err
	}
	var out CreditResult
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		now := s.now()
		a, err := loadAccount(tx, in.UserID, now)
		if err != nil {
			return err
		}
		if a.General+in.amount > money.Max {
			return fault.Invalid("amount", "would make the balance larger than the wallet holds")
		}
		t := &Transaction{ID: newID("txn", now), TransactionType: TypeCredit, Amount: in.amount, Description: "Account credit: " + in.Reason,
			Reference: in.Reason, CreatedAt: now, Entries: []Entry{{AccExternal, -in.amount}, {AccGeneral, in.amount}}}
		if err := s.post(tx, a, t, events.Event{EventType: "wallet.credited", ActorID: p.UserID, IP: auth.ClientIP(ctx),
			Payload: events.Payload(map[string]any{"reason": in.Reason})}); err != nil {
			return err
		}
		out = CreditResult{Transaction: t, GeneralBalance: a.General}
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("credit the balance", err)
	}
	return &out, nil
}
