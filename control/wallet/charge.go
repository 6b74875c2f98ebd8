package wallet

import (
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

var _ domain.Payer = (*Service)(nil)

// Charge debits c.Amount from the user's general balance inside the
// caller's transaction tx (domain.Payer): the debit, its ledger
// transaction (type c.Kind, the amount going to the sales account) and
// what it pays for commit together. Insufficient balance is a 400 that
// rolls the caller back.
func (s *Service) Charge(tx *store.Tx, c domain.Charge) (money.Amount, error) {
	if c.UserID == "" {
		return 0, fault.Invalid("user_id", "is required")
	}
	if c.Amount <= 0 || c.Amount > money.Max {
		return 0, fault.Invalid("amount", "must be more than 0.00")
	}
	kind := c.Kind
	if kind == "" {
		kind = "purchase"
	}
	now := s.now()
	a, err := loadAccount(tx, c.UserID, now)
	if err != nil {
		return 0, err
	}
	if a.General < c.Amount {
		return 0, insufficient("price", a.General, c.Amount)
	}
	desc := c.Description
	if desc == "" {
		desc = kind
	}
	t := &Transaction{ID: newID("txn", now), TransactionType: kind, Amount: c.Amount, Description: desc, Reference: c.Reference,
		CreatedAt: now, Entries: []Entry{{AccGeneral, -c.Amount}, {AccSales, c.Amount}}}
	if err := s.post(tx, a, t, events.Event{EventType: "wallet.charged", ActorID: c.UserID,
		Payload: events.Payload(map[string]any{"kind": kind, "reference": c.Reference})}); err != nil {
		return 0, err
	}
	return a.General, nil
}
