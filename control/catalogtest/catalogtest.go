// Package catalogtest holds what the images and servers unit tests share: a
// domain environment on a real store with the real wallet providing the
// Payments seam, contexts that carry a caller, funding and balance reads,
// and the per-engine TestMain.
package catalogtest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/gofiber/fiber/v3"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/control/wallet"
	"deckhand/platform"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/ratelimit"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// Env is a domain environment over db with clock, and the wallet built on
// the same environment, which provides its Payments; the wallet stops with
// the test.
func Env(t testing.TB, name string, db *store.DB, clock clockpkg.Clock) (domain.Env[domain.NoConfig], *wallet.Service) {
	t.Helper()
	env := domain.Env[domain.NoConfig]{Name: name, Store: db, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Events: events.NewLog(db, clock), Authz: domain.NewAuthorizer(), Payments: &domain.Payments{},
		Limiter: ratelimit.NewStoreLimiter(db, clock)}
	ProvideUserExists(env.Authz, db)
	w, err := wallet.New(domain.WithConfig(env, wallet.Config{TransferFeeBPS: 500}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return env, w
}

// ProvideUserExists stands in for the identity domain's "user.exists"
// check (control/identity, directory.go) in tests built without identity:
// an account exists when its record is in identity's user bucket, which
// such tests write themselves (AddUser, Credit).
func ProvideUserExists(authz *domain.Authorizer, db *store.DB) {
	authz.Provide("user.exists", func(ctx context.Context, param func(string) string) error {
		id := param("user_id")
		return db.ViewContext(ctx, func(tx *store.Tx) error {
			if tx.GetRaw(identityUsers, id) == nil {
				return fault.NotFound("user", id)
			}
			return nil
		})
	})
}

// identityUsers is the identity domain's user bucket.
const identityUsers = "identity_users"

// AddUser writes the identity record of an account with id (nothing when
// it exists), so the stand-in check of ProvideUserExists finds it.
func AddUser(t testing.TB, db *store.DB, id string) {
	t.Helper()
	err := db.Update(func(tx *store.Tx) error {
		if tx.GetRaw(identityUsers, id) != nil {
			return nil
		}
		return tx.Put(identityUsers, id, map[string]string{"id": id})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// User is a context in which user acts with the user role.
func User(id string) context.Context {
	return auth.WithClientIP(auth.NewContext(context.Background(), &auth.Principal{UserID: id, Role: "user", Kind: auth.KindSession, SessionID: "s-" + id}), "127.0.0.1")
}

// Admin is a context in which id acts with the admin role.
func Admin(id string) context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: id, Role: auth.RoleAdmin, Kind: auth.KindSession, SessionID: "s-" + id})
}

// Credit adds amount to user's general balance (the wallet's admin credit).
// The wallet credits only users the identity domain holds; these tests run
// without identity, so the user's presence in its bucket is written first.
func Credit(t testing.TB, db *store.DB, w *wallet.Service, user string, amount money.Amount) {
	t.Helper()
	AddUser(t, db, user)
	if _, err := w.Credit(Admin("funder"), wallet.CreditInput{UserID: user, Amount: amount.String(), Reason: "test funds"}); err != nil {
		t.Fatal(err)
	}
}

// Balance is user's general balance and their transactions other than
// credits, oldest first.
func Balance(t testing.TB, w *wallet.Service, user string) (money.Amount, []wallet.Transaction) {
	t.Helper()
	b, err := w.Balances(User(user))
	if err != nil {
		t.Fatal(err)
	}
	l, err := w.ListTransactions(User(user), wallet.TransactionQuery{PageQuery: domain.PageQuery{Page: 1, Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	return b.GeneralBalance, slices.DeleteFunc(l.Transactions, func(tr wallet.Transaction) bool { return tr.TransactionType == "credit" })
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

// Host serves routes the way the control plane does (every caller is the
// signed-in user "u"; limits counted on db), and checks that each route
// is in its OpenAPI document.
func Host(t testing.TB, db *store.DB, clock clockpkg.Clock, routes []platform.Route) *platform.Host {
	t.Helper()
	anyone := platform.AuthenticatorFunc(func(fiber.Ctx) (*auth.Principal, error) {
		return &auth.Principal{UserID: "u", Role: auth.RoleUser, Kind: auth.KindSession}, nil
	})
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "catalog"}, Auth: anyone,
		Limiter: ratelimit.NewStoreLimiter(db, clock)}, routes)
	platformtest.CheckRoutesDocumented(t, h)
	return h
}
