// Package catalogtest holds what the images and servers unit tests share: a
// domain environment on a real store, contexts that carry a caller, and
// Payer, a stand-in for the wallet (the outside party of these domains)
// that keeps real balance records in the same store and charges inside
// the caller's transaction as the wallet does.
package catalogtest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// Env is a domain environment over db with a fake clock; when payer is
// not nil it is provided as the Payments seam.
func Env(t testing.TB, name string, db *store.DB, clock platform.Clock, payer domain.Payer) domain.Env[domain.NoConfig] {
	t.Helper()
	pay := &domain.Payments{}
	if payer != nil {
		pay.Provide(payer)
	}
	return domain.Env[domain.NoConfig]{Name: name, Store: db, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Events: events.NewLog(db, clock), Authz: domain.NewAuthorizer(), Payments: pay,
		Limiter: platform.NewStoreLimiter(db, clock)}
}

// User is a context in which user acts with the user role.
func User(id string) context.Context {
	return auth.WithClientIP(auth.NewContext(context.Background(), &auth.Principal{UserID: id, Role: "user", Kind: auth.KindSession, SessionID: "s-" + id}), "127.0.0.1")
}

// Admin is a context in which id acts with the admin role.
func Admin(id string) context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: id, Role: auth.RoleAdmin, Kind: auth.KindSession, SessionID: "s-" + id})
}

// Bucket is where Payer keeps balances (user id → minor units) and its
// ledger (user id/sequence → Charge).
const (
	Bucket       = "catalogtest_balances"
	LedgerBucket = "catalogtest_ledger"
)

// Payer debits balances kept in Bucket; a debit larger than the balance
// is a 400 that rolls the caller's transaction back.
type Payer struct{}

// Charge implements domain.Payer.
func (Payer) Charge(tx *store.Tx, c domain.Charge) (money.Amount, error) {
	var bal money.Amount
	if _, err := tx.Get(Bucket, c.UserID, &bal); err != nil {
		return 0, err
	}
	if c.Amount <= 0 {
		return 0, platform.Invalid("amount", "must be positive")
	}
	if bal < c.Amount {
		return 0, platform.Errorf(platform.CodeBadRequest, "insufficient balance: %s needed, %s available", c.Amount, bal)
	}
	bal -= c.Amount
	seq, err := tx.NextSeq(LedgerBucket)
	if err != nil {
		return 0, err
	}
	if err := tx.Put(LedgerBucket, c.UserID+"/"+store.SeqKey(seq), c); err != nil {
		return 0, err
	}
	return bal, tx.Put(Bucket, c.UserID, bal)
}

// Credit adds amount to user's balance.
func Credit(t testing.TB, db *store.DB, user string, amount money.Amount) {
	t.Helper()
	err := db.Update(func(tx *store.Tx) error {
		var bal money.Amount
		if _, err := tx.Get(Bucket, user, &bal); err != nil {
			return err
		}
		return tx.Put(Bucket, user, bal+amount)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Balance is user's balance and the charges recorded for them.
func Balance(t testing.TB, db *store.DB, user string) (money.Amount, []domain.Charge) {
	t.Helper()
	var bal money.Amount
	var ledger []domain.Charge
	err := db.View(func(tx *store.Tx) error {
		if _, err := tx.Get(Bucket, user, &bal); err != nil {
			return err
		}
		return tx.Scan(LedgerBucket, store.ScanOptions{Prefix: user + "/"}, func(_ string, raw []byte) error {
			var c domain.Charge
			if err := json.Unmarshal(raw, &c); err != nil {
				return err
			}
			ledger = append(ledger, c)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return bal, ledger
}

// EachEngine is TestMain for a domain's unit tests: every test runs once
// per store engine (bbolt, then PostgreSQL), with *cur set to the run's.
func EachEngine(m *testing.M, cur *storetest.Engine) int {
	code := 0
	for _, e := range storetest.Engines() {
		*cur = e
		if c := m.Run(); c != 0 {
			code = c
		}
	}
	platformtest.StopPostgres()
	return code
}
