package wallet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// TransferInput is the body of POST /api/v1/wallet/transfer-to-ai.
type TransferInput struct {
	Amount         string  `json:"amount" required:"true" pattern:"^[0-9]+(\\.[0-9]{1,2})?$" doc:"decimal string, up to 2 decimals, no sign, no exponent, at least 0.01 (\"25.00\")"`
	IdempotencyKey *string `json:"idempotency_key,omitempty" doc:"1-128 characters with at least one non-space; the same key and amount replays the first receipt"`
	ExpectedFeeBPS *int    `json:"expected_fee_bps,omitempty" doc:"0-9999: the fee the client showed; 409 TRANSFER_FEE_CHANGED when the fee in force differs"`

	amount money.Amount
}

// MaxKeyLen bounds an idempotency key (characters).
const MaxKeyLen = 128

// Validate checks amount, key and expected fee, naming the field and rule.
func (in *TransferInput) Validate() error {
	a, err := parseAmount("amount", in.Amount)
	if err != nil {
		return err
	}
	in.amount = a
	if in.IdempotencyKey != nil {
		if err := checkKey(*in.IdempotencyKey); err != nil {
			return err
		}
	}
	if in.ExpectedFeeBPS != nil && (*in.ExpectedFeeBPS < 0 || *in.ExpectedFeeBPS > 9999) {
		return fault.Invalid("expected_fee_bps", "must be an integer from 0 to 9999, got %d", *in.ExpectedFeeBPS)
	}
	return nil
}

// parseAmount applies money.Parse's rule and demands more than zero (a
// transfer or credit of nothing would write an empty ledger transaction).
func parseAmount(field, s string) (money.Amount, error) {
	if s == "" {
		return 0, fault.Invalid(field, "is required: %s", money.ErrFormat.Error())
	}
	a, err := money.Parse(s)
	if errors.Is(err, money.ErrFormat) {
		return 0, fault.Invalid(field, "%s, got %q", money.ErrFormat.Error(), s)
	}
	if err != nil {
		return 0, fault.Invalid(field, "%s", err.Error())
	}
	if a == 0 {
		return 0, fault.Invalid(field, "must be at least 0.01")
	}
	return a, nil
}

func checkKey(k string) error {
	n := utf8.RuneCountInString(k)
	switch {
	case !utf8.ValidString(k):
		return fault.Invalid("idempotency_key", "must be valid UTF-8")
	case n == 0 || n > MaxKeyLen:
		return fault.Invalid("idempotency_key", "must be 1 to 128 characters, got %d", n)
	case strings.TrimFunc(k, unicode.IsSpace) == "":
		return fault.Invalid("idempotency_key", "must contain a non-whitespace character")
	}
	return nil
}

// Receipt is the answer of a transfer (and of its replays).
type Receipt struct {
	TransactionID    string       `json:"transaction_id"`
	GrossTransferred money.Amount `json:"gross_transferred" doc:"taken from the general balance"`
	NetAICredit      money.Amount `json:"net_ai_credit" doc:"added to the AI limit: gross minus fee"`
	Fee              money.Amount `json:"fee" doc:"gross × fee_bps / 10000, rounded half up to the cent"`
	FeeBPS           int          `json:"fee_bps"`
	GeneralBalance   money.Amount `json:"general_balance" doc:"general balance after the transfer"`
	AIBalance        money.Amount `json:"ai_balance" doc:"AI remaining (limit minus usage) after the transfer"`
	KeyCreated       bool         `json:"key_created" doc:"this transfer created the user's AI key"`
	LimitSyncPending bool         `json:"limit_sync_pending" doc:"the AI provider has not yet confirmed the new limit; a background retry finishes it"`
	Replayed         bool         `json:"replayed" doc:"true: the receipt of an earlier request with this idempotency key; nothing moved now"`
}

// keyRecord keeps an idempotency key with its request and receipt.
type keyRecord struct {
	Key       string       `json:"key"`
	Amount    money.Amount `json:"amount"`
	FeeBPS    *int         `json:"expected_fee_bps,omitempty"`
	Receipt   Receipt      `json:"receipt"`
	CreatedAt time.Time    `json:"created_at"`
}

func keyID(userID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return userKey(userID, hex.EncodeToString(sum[:]))
}

// TransferFee is GET /api/v1/wallet/transfer-fee: the fee a client shows
// before a transfer and sends back as expected_fee_bps.
type TransferFee struct {
	FeeBPS int `json:"fee_bps" doc:"the platform fee on transfers to AI credit, in basis points (1/100 of a percent)"`
}

// Fee is the transfer fee in force.
func (s *Service) Fee(context.Context) (TransferFee, error) {
	return TransferFee{FeeBPS: s.feeBPS}, nil
}

func (s *Service) transferRoutes() []platform.Route {
	return []platform.Route{{
		Method: http.MethodGet, Path: "/api/v1/wallet/transfer-fee", OperationID: "getTransferFee", Policy: platform.SignedIn, Tags: []string{"wallet"},
		Summary: "The fee in force on transfers to AI credit (show it, then send it as expected_fee_bps)",
		Message: "Transfer fee", Op: platform.ReadOp(s.Fee),
	}, {
		Method: http.MethodPost, Path: "/api/v1/wallet/transfer-to-ai", Policy: platform.SignedIn, Tags: []string{"wallet"},
		Summary: "Move money from the general balance to AI credit (one way), minus the platform fee",
		Description: "fee = amount × fee_bps / 10000 rounded half up to the cent (fee_bps is --transfer-fee-bps); the AI limit grows by " +
			"amount − fee, the fee becomes an AI fee record. An amount of 0 is refused (at least 0.01). `idempotency_key` follows Stripe: " +
			"kept per user with the request and receipt for at least 24 h; the same key and amount answers the first receipt with " +
			"`replayed: true` and moves nothing, concurrent requests with one key move money once, the same key with another amount is " +
			"409 TRANSFER_IDEMPOTENCY_KEY_REUSED. A replay is answered before the fee check. Insufficient balance: 400.",
		OperationID: "transferToAI", Message: "Transfer completed", Op: platform.Op(s.Transfer),
	}}
}

// Transfer moves in.Amount from the caller's general balance to AI credit.
func (s *Service) Transfer(ctx context.Context, in TransferInput) (*Receipt, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return s.transfer(ctx, p.UserID, auth.ClientIP(ctx), in)
}

func (s *Service) transfer(ctx context.Context, userID, ip string, in TransferInput) (*Receipt, error) {
	var out Receipt
	fn := func(tx *store.Tx) error {
		out = Receipt{}
		now := s.now()
		// The account's lock first: the key's record and the balance are
		// then read after every earlier transfer of this user committed.
		a, err := lockAccount(tx, userID, now)
		if err != nil {
			return err
		}
		var kid string
		if in.IdempotencyKey != nil {
			kid = keyID(userID, *in.IdempotencyKey)
			var rec keyRecord
			ok, err := tx.Get(bucketKeys, kid, &rec)
			if err != nil {
				return fault.Internal("read the idempotency key", err)
			}
			if ok && now.Sub(rec.CreatedAt) < s.keep {
				if rec.Amount != in.amount {
					return fault.Errorf(CodeKeyReused, "idempotency_key: already used with amount %s; a new transfer needs a new key", rec.Amount)
				}
				out = rec.Receipt
				out.Replayed = true
				return nil
			}
		}
		if in.ExpectedFeeBPS != nil && *in.ExpectedFeeBPS != s.feeBPS {
			return fault.Errorf(CodeFeeChanged, "expected_fee_bps: the fee is now %d bps, not %d; show the new fee and send again", s.feeBPS, *in.ExpectedFeeBPS)
		}
		if a.General < in.amount {
			return insufficient("amount", a.General, in.amount)
		}
		fee := money.Fee(in.amount, s.feeBPS)
		net := in.amount - fee
		created := a.AIKeyID == ""
		if created {
			a.AIKeyID = newID("aik", now)
		}
		t := &Transaction{ID: newID("txn", now), TransactionType: TypeTransfer, Amount: in.amount, Fee: fee,
			Description: "Transfer to AI credit", CreatedAt: now,
			Entries: []Entry{{AccGeneral, -in.amount}, {AccAILimit, net}, {AccFees, fee}}}
		if err := s.post(tx, a, t, events.Event{EventType: "wallet.transferred_to_ai", ResourceType: "wallet_transaction",
			ActorID: userID, IP: ip, Payload: events.Payload(map[string]any{"fee": fee, "net_ai_credit": net, "fee_bps": s.feeBPS})}); err != nil {
			return err
		}
		if fee > 0 {
			f := AIFee{ID: newID("fee", now), UserID: userID, TransactionID: t.ID, Amount: fee, CreatedAt: now,
				Transaction: FeeTransaction{ID: t.ID, Reason: "transfer_to_ai fee (" + bpsPercent(s.feeBPS) + ")", Amount: in.amount}}
			if err := tx.Put(bucketFees, userKey(userID, f.ID), f); err != nil {
				return fault.Internal("write the fee record", err)
			}
		}
		out = Receipt{TransactionID: t.ID, GrossTransferred: in.amount, NetAICredit: net, Fee: fee, FeeBPS: s.feeBPS,
			GeneralBalance: a.General, AIBalance: a.AILimit - a.AIUsage, KeyCreated: created}
		if s.ai != nil {
			// Marked pending in the same transaction; a confirmed SetLimit
			// clears it, so a crash between commit and sync loses nothing.
			if err := tx.Put(bucketAIPending, userID, pendingLimit{KeyID: a.AIKeyID, Limit: a.AILimit}); err != nil {
				return fault.Internal("mark the AI limit pending", err)
			}
		}
		if kid != "" {
			if err := tx.Put(bucketKeys, kid, keyRecord{Key: *in.IdempotencyKey, Amount: in.amount, FeeBPS: in.ExpectedFeeBPS,
				Receipt: out, CreatedAt: now}); err != nil {
				return fault.Internal("store the idempotency key", err)
			}
		}
		return nil
	}
	if err := s.batch.Update(fn); err != nil {
		return nil, fault.Wrap("transfer to AI credit", err)
	}
	if !out.Replayed && s.ai != nil {
		if !s.syncLimit(ctx, userID) {
			out.LimitSyncPending = true
			s.markReceiptPending(userID, in.IdempotencyKey)
		}
	}
	return &out, nil
}

func bpsPercent(bps int) string {
	return money.Amount(bps).String() + "%"
}
