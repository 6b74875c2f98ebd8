// Package wallet owns the control plane's money: each user's general USD
// balance and AI credit limit, the double-entry ledger behind them,
// transfers from general to AI credit with the platform fee, the AI fee
// records, invoices (numbered without gaps per year, with a PDF), saved
// payment methods, the operators' credit and the Payer other domains
// charge purchases through (domain.Payments).
//
// Rules that hold on both engines, across replicas and after a crash:
//   - amounts are money.Amount (integer cents); they go out as "12.50";
//   - every balance change is a ledger transaction whose entries sum to
//     zero, written in the same store transaction as the balance, so the
//     balances can always be derived from the ledger (Verify, and
//     `deckhand-control wallet verify`, prove it);
//   - a transfer's idempotency key is stored with its request and receipt
//     in the transaction that moves the money, so one key moves money once.
package wallet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"deckhand/control/domain"
	"deckhand/control/money"
	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Error codes of the wallet (409s named by the interface).
const (
	CodeKeyReused  = "TRANSFER_IDEMPOTENCY_KEY_REUSED"
	CodeFeeChanged = "TRANSFER_FEE_CHANGED"
)

func init() {
	fault.RegisterCode(CodeKeyReused, http.StatusConflict)
	fault.RegisterCode(CodeFeeChanged, http.StatusConflict)
}

// Buckets this package owns. Per-user records are keyed "<user>/<id>" so a
// prefix scan lists one user's and a full scan (Verify) everyone's.
const (
	bucketAccounts  = "wallet_accounts"        // user → account
	bucketTxns      = "wallet_transactions"    // user/txn id → Transaction
	bucketFees      = "wallet_ai_fees"         // user/fee id → AIFee
	bucketKeys      = "wallet_transfer_keys"   // user/sha256(key) → keyRecord
	bucketInvoices  = "wallet_invoices"        // user/invoice id → Invoice
	bucketInvByTxn  = "wallet_invoices_by_txn" // user/txn id → invoice id
	bucketMethods   = "wallet_payment_methods" // user/method id → PaymentMethod
	bucketDefaults  = "wallet_payment_default" // user → default method id
	bucketAIPending = "wallet_ai_sync_pending" // user → limit the AI side has not confirmed
	seqInvoicePref  = "wallet_invoice_seq_"    // + year: the year's invoice counter
)

// Currency is the one currency of the wallet.
const Currency = "USD"

// Seller is who issues invoices (printed on the PDF).
type Seller struct {
	Name    string
	Address string
	Email   string
}

// Config is the wallet's config section (control/server fills it from the
// serve flags).
type Config struct {
	// TransferFeeBPS is --transfer-fee-bps: the platform fee on transfers
	// to AI credit in basis points (0-9999).
	TransferFeeBPS int
	// AICredit is the outward AI-credit provider; nil keeps the limit in
	// the store only (the embedded default).
	AICredit AICredit
	// RetryEvery is how often limits the AI side did not confirm are sent
	// again (default 5 s).
	RetryEvery time.Duration
	// KeyRetention is how long idempotency keys are kept (default and
	// minimum 24 h).
	KeyRetention time.Duration
	Seller       Seller
	// MaxBatch caps how many transfers one group commit carries: 0 is
	// the default (128), 1 commits transfers one at a time in arrival
	// order, a negative value gives each its own concurrent transaction.
	// Transfers lock their account's row (store.UpdateLocking), so on
	// PostgreSQL concurrent transfers of one user queue on that lock and
	// those of different users run side by side.
	MaxBatch int
}

// AICredit is the AI-credit side of transfers: a provider that enforces a
// spending limit on the user's AI key. The limit itself always lives in
// the wallet's store (the ledger's ai_limit account); SetLimit makes the
// provider agree with it, after the transfer has committed. A failed
// SetLimit leaves the transfer done and the limit marked pending; the
// wallet retries until the provider accepts it.
type AICredit interface {
	// SetLimit sets the spending limit of the user's AI key to limit.
	SetLimit(ctx context.Context, userID, keyID string, limit money.Amount) error
	// Usage is what the user's AI key has spent so far.
	Usage(ctx context.Context, userID, keyID string) (money.Amount, error)
}

// Service is the wallet domain.
type Service struct {
	env    domain.Env[Config]
	db     *store.DB
	clock  clockpkg.Clock
	log    *slog.Logger
	feeBPS int
	ai     AICredit
	seller Seller
	batch  *store.Batcher
	keep   time.Duration
	// userExists is identity's "user.exists" check (control/identity,
	// directory.go): the wallet asks it rather than reading identity's buckets.
	userExists platform.Check

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// New builds the wallet and provides its Payer to the other domains.
func New(env domain.Env[Config]) (*Service, error) {
	c := env.Config
	if env.Store == nil {
		return nil, errors.New("wallet: a store is required")
	}
	if c.TransferFeeBPS < 0 || c.TransferFeeBPS > 9999 {
		return nil, fmt.Errorf("wallet: --transfer-fee-bps must be between 0 and 9999, got %d", c.TransferFeeBPS)
	}
	if env.Authz == nil {
		return nil, errors.New("wallet: an authorizer is required (identity provides user.exists)")
	}
	if err := env.Store.Declare(context.Background(), Tables...); err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	if env.Clock == nil {
		env.Clock = clockpkg.SystemClock{}
	}
	if env.Logger == nil {
		env.Logger = slog.Default()
	}
	if c.RetryEvery <= 0 {
		c.RetryEvery = 5 * time.Second
	}
	if c.KeyRetention < 24*time.Hour {
		c.KeyRetention = 24 * time.Hour
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 128
	}
	if c.Seller.Name == "" {
		c.Seller = Seller{Name: "deckhand platform", Address: "Operated by the deckhand control plane", Email: "billing@deckhand.invalid"}
	}
	s := &Service{env: env, db: env.Store, clock: env.Clock, log: env.Logger, feeBPS: c.TransferFeeBPS,
		ai: c.AICredit, seller: c.Seller, keep: c.KeyRetention, batch: store.NewBatcher(env.Store, c.MaxBatch, true),
		stop: make(chan struct{}), done: make(chan struct{})}
	s.userExists = env.Authz.Policy(checkUserExists, "the named account exists").Check
	if env.Payments != nil {
		env.Payments.Provide(s)
	}
	go s.background(c.RetryEvery)
	return s, nil
}

// Close stops the background work (AI limit retries, key expiry).
func (s *Service) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// FeeBPS is the fee in force.
func (s *Service) FeeBPS() int { return s.feeBPS }

// background retries pending AI limits and expires old idempotency keys.
func (s *Service) background(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	sweep := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.retryPending(context.Background())
		if time.Since(sweep) > time.Hour {
			sweep = time.Now()
			s.expireKeys()
		}
	}
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// newID is a time-ordered unique id: prefix, 16 hex digits of the clock's
// nanoseconds, 8 random hex digits. Ids made later sort after.
func newID(prefix string, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%016x%s", prefix, now.UnixNano(), hex.EncodeToString(b[:]))
}

func userKey(userID, id string) string { return userID + "/" + id }

// Routes is the wallet's route table.
func (s *Service) Routes() []platform.Route {
	var out []platform.Route
	out = append(out, s.balanceRoutes()...)
	out = append(out, s.transferRoutes()...)
	out = append(out, s.listRoutes()...)
	out = append(out, s.invoiceRoutes()...)
	out = append(out, s.methodRoutes()...)
	out = append(out, s.adminRoutes()...)
	return out
}
