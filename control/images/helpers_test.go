package images_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"deckhand/control/catalogtest"
	"deckhand/control/images"
	"deckhand/control/wallet"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// engine is the store engine of this run: TestMain runs every test on
// bbolt, then on PostgreSQL.
var engine storetest.Engine

func TestMain(m *testing.M) { os.Exit(catalogtest.EachEngine(m, &engine)) }

type env struct {
	svc   *images.Service
	db    *store.DB
	clock *clockpkg.FakeClock
	// another opens a second handle on the same storage (a replica on
	// PostgreSQL; the same DB on bbolt).
	another func() *store.DB
	// wallet is the real wallet on the same store, providing Payments.
	wallet *wallet.Service
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db, another := engine.Open(t)
	clock := clockpkg.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	denv, w := catalogtest.Env(t, "images", db, clock)
	svc, err := images.New(denv)
	if err != nil {
		t.Fatal(err)
	}
	return &env{svc: svc, db: db, clock: clock, another: another, wallet: w}
}

var admin = catalogtest.Admin("admin-1")

// create publishes an image, one clock second after the previous one.
func (e *env) create(t testing.TB, in images.CreateInput) *images.Image {
	t.Helper()
	e.clock.Advance(time.Second)
	img, err := e.svc.Create(admin, in)
	if err != nil {
		t.Fatalf("create %s: %v", in.Alias, err)
	}
	return img
}

// code is the error's stable code ("" for nil).
func code(err error) string {
	if err == nil {
		return ""
	}
	var pe *fault.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return "untyped: " + err.Error()
}

func wantCode(t testing.TB, err error, want, field string) {
	t.Helper()
	if got := code(err); got != want {
		t.Fatalf("error %v: code %q, want %q", err, got, want)
	}
	var pe *fault.Error
	if field != "" && (!errors.As(err, &pe) || pe.Field != field) {
		t.Fatalf("error %v does not name field %q", err, field)
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
