package wallet_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"deckhand/control/catalogtest"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/control/wallet"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	platformtest.StopPostgres()
	os.Exit(code)
}

// flakyAI is a stand-in AI provider (an outside party) whose SetLimit
// fails while down is set.
type flakyAI struct {
	down   atomic.Bool
	mu     sync.Mutex
	limits map[string]money.Amount
	calls  int
}

func (f *flakyAI) SetLimit(_ context.Context, user, _ string, limit money.Amount) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down.Load() {
		return errors.New("provider unreachable")
	}
	f.limits[user] = limit
	return nil
}

func (f *flakyAI) Usage(context.Context, string, string) (money.Amount, error) { return 0, nil }

type fixture struct {
	db  *store.DB
	w   *wallet.Service
	log *events.Log
	pay *domain.Payments
}

type contextT = context.Context

func newFixture(t *testing.T, db *store.DB, c wallet.Config) *fixture { return newFixtureTB(t, db, c) }

func newFixtureTB(t testing.TB, db *store.DB, c wallet.Config) *fixture {
	t.Helper()
	log := events.NewLog(db, nil)
	pay := &domain.Payments{}
	authz := domain.NewAuthorizer()
	catalogtest.ProvideUserExists(authz, db)
	w, err := wallet.New(domain.Env[wallet.Config]{Store: db, Events: log, Authz: authz, Payments: pay, Config: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &fixture{db: db, w: w, log: log, pay: pay}
}

func as(user, role string) context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: user, Role: role, Kind: auth.KindSession})
}

// user makes a user the wallet can credit (the identity domain's record).
func (f *fixture) user(t *testing.T, id, amount string) context.Context {
	return f.userTB(t, id, amount)
}

func (f *fixture) userTB(t testing.TB, id, amount string) context.Context {
	t.Helper()
	catalogtest.AddUser(t, f.db, id)
	if amount != "" {
		if _, err := f.w.Credit(as("admin", auth.RoleAdmin), wallet.CreditInput{UserID: id, Amount: amount, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	return as(id, auth.RoleUser)
}

func ptr[T any](v T) *T { return &v }

func engines(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	for _, e := range storetest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			db, _ := e.Open(t)
			fn(t, db)
		})
	}
}

func mustVerify(t *testing.T, db *store.DB) *wallet.Report {
	t.Helper()
	r, err := wallet.Verify(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("verify: %v", r.Problems)
	}
	return r
}

func TestLimitSyncPendingUntilTheProviderTakesIt(t *testing.T) {
	engines(t, func(t *testing.T, db *store.DB) {
		ai := &flakyAI{limits: map[string]money.Amount{}}
		ai.down.Store(true)
		f := newFixture(t, db, wallet.Config{TransferFeeBPS: 500, AICredit: ai, RetryEvery: 3600e9})
		ctx := f.user(t, "u1", "20.00")
		r, err := f.w.Transfer(ctx, wallet.TransferInput{Amount: "10.00", IdempotencyKey: ptr("a")})
		if err != nil {
			t.Fatal(err)
		}
		if !r.LimitSyncPending || r.NetAICredit != 950 || !r.KeyCreated {
			t.Fatalf("receipt: %+v", r)
		}
		again, err := f.w.Transfer(ctx, wallet.TransferInput{Amount: "10.00", IdempotencyKey: ptr("a")})
		if err != nil || !again.Replayed || !again.LimitSyncPending {
			t.Fatalf("replay: %+v %v", again, err)
		}
		if n, _ := f.w.PendingLimits(); n != 1 {
			t.Fatalf("%d pending", n)
		}
		// Balances already show the new limit: it lives in our store.
		b, err := f.w.Balances(ctx)
		if err != nil || b.AILimit != 950 {
			t.Fatalf("balances %+v %v", b, err)
		}
		ai.down.Store(false)
		f.w.RetryPending(context.Background())
		if n, _ := f.w.PendingLimits(); n != 0 {
			t.Fatalf("%d still pending after the provider came back", n)
		}
		if ai.limits["u1"] != 950 {
			t.Fatalf("provider limit %s, want 9.50", ai.limits["u1"])
		}
		r2, err := f.w.Transfer(ctx, wallet.TransferInput{Amount: "1.00"})
		if err != nil || r2.LimitSyncPending || ai.limits["u1"] != 950+95 {
			t.Fatalf("second transfer %+v %v, provider %s", r2, err, ai.limits["u1"])
		}
		mustVerify(t, db)
	})
}

func TestChargeCommitsOrRollsBackWithTheCallersWrite(t *testing.T) {
	engines(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, wallet.Config{TransferFeeBPS: 500})
		f.user(t, "buyer", "5.00")
		buy := func(price money.Amount, image string) (money.Amount, error) {
			var left money.Amount
			err := db.Update(func(tx *store.Tx) error {
				if err := tx.Put("catalog_owned", "buyer/"+image, true); err != nil {
					return err
				}
				var err error
				left, err = f.pay.Charge(tx, domain.Charge{UserID: "buyer", Amount: price, Kind: "image_purchase", Reference: image, Description: "Image " + image})
				return err
			})
			return left, err
		}
		left, err := buy(300, "img-1")
		if err != nil || left != 200 {
			t.Fatalf("charge: %s %v", left, err)
		}
		_, err = buy(300, "img-2")
		var pe *fault.Error
		if !errors.As(err, &pe) || pe.Status() != 400 {
			t.Fatalf("insufficient: %v", err)
		}
		_ = db.View(func(tx *store.Tx) error {
			if tx.GetRaw("catalog_owned", "buyer/img-2") != nil {
				t.Error("the purchase committed without its payment")
			}
			if tx.GetRaw("catalog_owned", "buyer/img-1") == nil {
				t.Error("the paid purchase is missing")
			}
			return nil
		})
		r := mustVerify(t, db)
		if r.Totals[wallet.AccSales] != 300 || r.Totals[wallet.AccGeneral] != 200 {
			t.Fatalf("totals %v", r.Totals)
		}
		l, err := f.w.ListTransactions(as("buyer", "user"), wallet.TransactionQuery{PageQuery: domain.PageQuery{Page: 1, Limit: 20, SortOrder: "desc"}, SortBy: "created_at"})
		if err != nil || len(l.Transactions) != 2 || l.Transactions[0].TransactionType != "image_purchase" || l.Transactions[0].Reference != "img-1" {
			t.Fatalf("transactions %+v %v", l, err)
		}
	})
}

// A group commit must not let one member's failure cost the others, nor
// let two members spend the same money.
func TestConcurrentTransfersSpendEachCentOnce(t *testing.T) {
	engines(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, wallet.Config{TransferFeeBPS: 0})
		ctx := f.user(t, "u", "25.00")
		var ok, poor atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 60; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.w.Transfer(ctx, wallet.TransferInput{Amount: "1.00", IdempotencyKey: ptr(fmt.Sprint("k", i%50))})
				var pe *fault.Error
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &pe) && pe.Status() == 400:
					poor.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		b, _ := f.w.Balances(ctx)
		if b.GeneralBalance != 0 || b.AILimit != 2500 {
			t.Fatalf("balances %+v (ok %d, insufficient %d)", b, ok.Load(), poor.Load())
		}
		mustVerify(t, db)
	})
}

func TestWalletActionsAreEvents(t *testing.T) {
	engines(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, wallet.Config{TransferFeeBPS: 100})
		ctx := f.user(t, "u", "10.00")
		r, err := f.w.Transfer(ctx, wallet.TransferInput{Amount: "5.00"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.w.GenerateInvoice(ctx, wallet.TransactionRef{ID: r.TransactionID}); err != nil {
			t.Fatal(err)
		}
		m, err := f.w.CreateMethod(ctx, wallet.MethodInput{Type: "credit_card", Name: "c"})
		if err != nil {
			t.Fatal(err)
		}
		m2, _ := f.w.CreateMethod(ctx, wallet.MethodInput{Type: "paypal", Name: "p"})
		if _, err := f.w.UpdateMethod(ctx, wallet.MethodChange{MethodRef: wallet.MethodRef{ID: m2.ID}, Body: wallet.MethodUpdate{IsDefault: ptr(true)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.w.UpdateMethod(ctx, wallet.MethodChange{MethodRef: wallet.MethodRef{ID: m.ID}, Body: wallet.MethodUpdate{Status: ptr("inactive")}}); err != nil {
			t.Fatal(err)
		}
		evs, err := f.log.All()
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, e.EventType)
		}
		want := []string{"wallet.credited", "wallet.transferred_to_ai", "wallet.invoice.generated", "wallet.payment_method.created",
			"wallet.payment_method.created", "wallet.payment_method.default_changed", "wallet.payment_method.updated"}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	})
}

func TestVerifyFindsAnUnbalancedTransaction(t *testing.T) {
	engines(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, wallet.Config{})
		f.user(t, "u", "3.00")
		_ = db.Update(func(tx *store.Tx) error {
			return tx.Put("wallet_transactions", "u/txn_forged", wallet.Transaction{ID: "txn_forged", UserID: "u",
				Entries: []wallet.Entry{{Account: wallet.AccGeneral, Amount: 100}}})
		})
		r, err := wallet.Verify(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() || len(r.Problems) < 2 {
			t.Fatalf("problems %v", r.Problems)
		}
	})
}

// A credit asks identity's "user.exists" check: an id no account has is
// 404 and writes nothing.
func TestCreditNeedsAnExistingAccount(t *testing.T) {
	engines(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, wallet.Config{TransferFeeBPS: 500})
		_, err := f.w.Credit(as("admin", auth.RoleAdmin), wallet.CreditInput{UserID: "ghost", Amount: "5.00", Reason: "test"})
		if pe := fault.AsError(err); err == nil || pe.Code != fault.CodeNotFound {
			t.Fatalf("credit to an unknown id: %v, want NOT_FOUND", err)
		}
		if r := mustVerify(t, db); len(r.Problems) != 0 || r.Transactions != 0 {
			t.Fatalf("after a refused credit: %+v", r)
		}
		f.user(t, "real", "5.00")
	})
}
