package wallet

import (
	"encoding/json"
	"time"

	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Ledger accounts an entry moves money between. Every transaction's
// entries sum to zero: money enters through external (an operator's
// credit), sits in general or ai_limit, and leaves to fees (the platform's
// transfer fee) or sales (a purchase).
const (
	AccExternal = "external"
	AccGeneral  = "general"
	AccAILimit  = "ai_limit"
	AccFees     = "fees"
	AccSales    = "sales"
)

// Transaction types.
const (
	TypeCredit     = "credit"
	TypeTransfer   = "transfer_to_ai"
	StatusComplete = "completed"
)

// Entry is one leg of a ledger transaction.
type Entry struct {
	Account string       `json:"account" doc:"external, general, ai_limit, fees or sales"`
	Amount  money.Amount `json:"amount" doc:"signed decimal string: what this account gained (negative: lost)"`
}

// Transaction is one ledger transaction: it never changes once written.
type Transaction struct {
	ID              string       `json:"id"`
	UserID          string       `json:"user_id"`
	TransactionType string       `json:"transaction_type" doc:"credit, transfer_to_ai, or a selling domain's kind (image_purchase)"`
	Status          string       `json:"status" doc:"completed"`
	Amount          money.Amount `json:"amount" doc:"gross amount, decimal string"`
	Currency        string       `json:"currency"`
	Description     string       `json:"description"`
	Reference       string       `json:"reference,omitempty" doc:"what was bought (an image id) or the operator's reason"`
	Fee             money.Amount `json:"fee" doc:"platform fee taken (transfers)"`
	Entries         []Entry      `json:"entries"`
	GeneralBalance  money.Amount `json:"general_balance_after" doc:"general balance once this transaction applied"`
	CreatedAt       time.Time    `json:"created_at"`
	UpdatedAt       time.Time    `json:"updated_at"`
}

// account is one user's balances: always equal to the sums of the
// ledger's entries for that user (Verify).
type account struct {
	ID        string       `json:"id"`
	UserID    string       `json:"user_id"`
	General   money.Amount `json:"general_balance"`
	AILimit   money.Amount `json:"ai_limit"`
	AIUsage   money.Amount `json:"ai_usage"`
	AIKeyID   string       `json:"ai_key_id,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

func accountID(userID string) string { return "bal_" + userID }

// loadAccount reads the user's account; a user who never had money gets
// an empty one (not yet stored).
func loadAccount(tx *store.Tx, userID string, now time.Time) (*account, error) {
	return readAccount(tx.Get, userID, now)
}

// lockAccount is loadAccount that also locks the account's row until
// the transaction ends: in an UpdateLocking every change of this user's
// money and of what it guards (idempotency keys, the pending AI limit)
// then waits for the transactions before it. A user without an account
// has no money to move, so nothing to lock.
func lockAccount(tx *store.Tx, userID string, now time.Time) (*account, error) {
	return readAccount(tx.GetForUpdate, userID, now)
}

func readAccount(get func(bucket, key string, v any) (bool, error), userID string, now time.Time) (*account, error) {
	var a account
	ok, err := get(bucketAccounts, userID, &a)
	if err != nil {
		return nil, fault.Internal("read the balance", err)
	}
	if !ok {
		a = account{ID: accountID(userID), UserID: userID, CreatedAt: now, UpdatedAt: now}
	}
	return &a, nil
}

// post applies t's entries to the user's account and writes both, with an
// event, in tx: the one way balances change.
func (s *Service) post(tx *store.Tx, a *account, t *Transaction, ev events.Event) error {
	for _, e := range t.Entries {
		switch e.Account {
		case AccGeneral:
			a.General += e.Amount
		case AccAILimit:
			a.AILimit += e.Amount
		}
	}
	if a.General < 0 || a.AILimit < 0 {
		return fault.Internal("post a ledger transaction", errNegative)
	}
	a.UpdatedAt = t.CreatedAt
	t.GeneralBalance = a.General
	t.UserID = a.UserID
	if t.Status == "" {
		t.Status = StatusComplete
	}
	t.Currency = Currency
	t.UpdatedAt = t.CreatedAt
	if err := tx.Put(bucketTxns, userKey(a.UserID, t.ID), t); err != nil {
		return fault.Internal("write the ledger", err)
	}
	if err := tx.Put(bucketAccounts, a.UserID, a); err != nil {
		return fault.Internal("write the balance", err)
	}
	if s.env.Events != nil {
		ev.ResourceID = t.ID
		if ev.ResourceType == "" {
			ev.ResourceType = "wallet_transaction"
		}
		ev.Payload = mergePayload(ev.Payload, map[string]any{"transaction_id": t.ID, "user_id": a.UserID,
			"amount": t.Amount, "general_balance": a.General, "ai_limit": a.AILimit})
		if _, err := s.env.Events.Append(tx, ev); err != nil {
			return fault.Internal("record the event", err)
		}
	}
	return nil
}

func mergePayload(raw json.RawMessage, add map[string]any) json.RawMessage {
	m := map[string]any{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	for k, v := range add {
		m[k] = v
	}
	return events.Payload(m)
}

type walletError string

func (e walletError) Error() string { return string(e) }

const errNegative = walletError("a balance would go negative")

// insufficient is the 400 for a debit larger than the general balance.
func insufficient(field string, balance, need money.Amount) error {
	return &fault.Error{Code: fault.CodeBadRequest, Field: field, Details: field,
		Message: "insufficient balance: the general balance is " + balance.String() + " USD, " + field + " needs " + need.String() + " USD"}
}
