package fleet_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"deckhand/control/catalogtest"
	"deckhand/control/domain"
	"deckhand/control/fleet"
	"deckhand/control/servers"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

var engine storetest.Engine

// TestMain runs every test on bbolt, then on PostgreSQL.
func TestMain(m *testing.M) { os.Exit(catalogtest.EachEngine(m, &engine)) }

type env struct {
	db     *store.DB
	svc    *servers.Service
	fleet  *fleet.Fleet
	sealer *secrets.Sealer
	now    time.Time
}

func newEnv(t *testing.T) *env {
	db, _ := engine.Open(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	denv, _ := catalogtest.Env(t, "servers", db, clockpkg.NewFakeClock(now))
	sealer, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := servers.New(domain.WithConfig(denv, servers.Config{Sealer: sealer, LocalName: "local"}))
	if err != nil {
		t.Fatal(err)
	}
	f := fleet.New(fleet.Options{DB: db, Sealer: sealer, Installation: "itest"})
	t.Cleanup(func() { _ = f.Close() })
	return &env{db: db, svc: svc, fleet: f, sealer: sealer, now: now}
}

var admin = catalogtest.Admin("admin-1")

// server offers a free server named name with a docker endpoint.
func (e *env) server(t *testing.T, name string, capacity int) string {
	t.Helper()
	s, err := e.svc.Create(admin, servers.CreateInput{Name: name, Region: "eu", Price: json.Number("0")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: s.ID},
		Body: servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/" + name + ".sock", Capacity: capacity}}); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func (e *env) place(t *testing.T, owner string, usage map[string]int, n int, pin string, pinned bool) ([]string, error) {
	t.Helper()
	var out []string
	err := e.db.View(func(tx *store.Tx) error {
		var err error
		out, err = e.fleet.Place(tx, e.now, owner, usage, n, pin, pinned)
		return err
	})
	return out, err
}

func TestPlaceWithoutServersIsLocal(t *testing.T) {
	e := newEnv(t)
	got, err := e.place(t, "alice", nil, 3, "", false)
	if err != nil || strings.Join(got, ",") != ",," {
		t.Fatalf("placed %q %v, want the local engine thrice", got, err)
	}
}

func TestPlaceByRentalRoomAndDrain(t *testing.T) {
	e := newEnv(t)
	a, b, c := e.server(t, "a", 2), e.server(t, "b", 5), e.server(t, "c", 1)
	// The most free room first: b, then as room shrinks, by name.
	got, err := e.place(t, "alice", map[string]int{b: 3}, 4, "", false)
	if err != nil || strings.Join(got, ",") != strings.Join([]string{a, b, a, b}, ",") {
		t.Fatalf("placed %v %v", got, err)
	}
	// A server the owner rents comes first, though it has less room;
	// one another user rents takes none.
	if _, err := e.svc.Rent(catalogtest.User("alice"), servers.ServerRef{ID: c}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.place(t, "alice", nil, 2, "", false); err != nil || got[0] != c || got[1] != b {
		t.Fatalf("alice's rental first: %v %v", got, err)
	}
	if got, err := e.place(t, "bob", nil, 7, "", false); err != nil || strings.Contains(strings.Join(got, ","), c) {
		t.Fatalf("bob on alice's rental: %v %v", got, err)
	}
	// Draining takes a server out; when none has room the answer is 409.
	if _, err := e.svc.Drain(admin, servers.DrainInput{ServerRef: servers.ServerRef{ID: b}}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.place(t, "bob", nil, 2, "", false); err != nil || got[0] != a || got[1] != a {
		t.Fatalf("with b draining: %v %v", got, err)
	}
	if _, err := e.place(t, "bob", nil, 3, "", false); code(err) != fault.CodeConflict {
		t.Fatalf("past every server's room: %v", err)
	}
	// Pinned: the holder's server or a refusal naming why.
	if got, err := e.place(t, "bob", nil, 1, a, true); err != nil || got[0] != a {
		t.Fatalf("pinned to a: %v %v", got, err)
	}
	for _, pin := range []string{b, c} {
		if _, err := e.place(t, "bob", nil, 1, pin, true); code(err) != fault.CodeConflict {
			t.Fatalf("pinned to %s: %v", pin, err)
		}
	}
	if got, err := e.place(t, "bob", nil, 1, "", true); err != nil || got[0] != "" {
		t.Fatalf("pinned to the local engine: %v %v", got, err)
	}
	// Names come from the records.
	if n, ok := e.fleet.Name(context.Background(), b); !ok || n != "b" {
		t.Fatalf("name %q %v", n, ok)
	}
}

func code(err error) string {
	if err == nil {
		return ""
	}
	return fault.AsError(err).Code
}
