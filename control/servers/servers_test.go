package servers_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/control/catalogtest"
	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/money"
	"deckhand/control/servers"
	"deckhand/control/wallet"
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
	svc    *servers.Service
	db     *store.DB
	clock  *clockpkg.FakeClock
	wallet *wallet.Service
	sealer *secrets.Sealer
}

func newEnv(t *testing.T) *env {
	db, _ := engine.Open(t)
	clock := clockpkg.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	denv, w := catalogtest.Env(t, "servers", db, clock)
	sealer, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := servers.New(domain.WithConfig(denv, servers.Config{Sealer: sealer, LocalName: "local"}))
	if err != nil {
		t.Fatal(err)
	}
	return &env{svc: svc, db: db, clock: clock, wallet: w, sealer: sealer}
}

var admin = catalogtest.Admin("admin-1")

func code(err error) string {
	var pe *fault.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err != nil {
		return "untyped: " + err.Error()
	}
	return ""
}

func (e *env) create(t *testing.T, name, region, price string) *servers.Server {
	t.Helper()
	s, err := e.svc.Create(admin, servers.CreateInput{Name: name, Region: region, Price: json.Number(price), Specs: json.RawMessage(`{"cpu":4,"memory_gb":16}`)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func names(list []servers.Server) string {
	var s []string
	for _, v := range list {
		s = append(s, v.Name)
	}
	return strings.Join(s, ",")
}

func TestCreateRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		field string
		in    servers.CreateInput
	}{
		{"name", servers.CreateInput{Region: "eu"}},
		{"name", servers.CreateInput{Name: strings.Repeat("n", 101), Region: "eu"}},
		{"region", servers.CreateInput{Name: "a"}},
		{"region", servers.CreateInput{Name: "a", Region: "eu west"}},
		{"price", servers.CreateInput{Name: "a", Region: "eu", Price: "-3"}},
		{"price", servers.CreateInput{Name: "a", Region: "eu", Price: "1.234"}},
		{"specs", servers.CreateInput{Name: "a", Region: "eu", Specs: json.RawMessage(`[1]`)}},
		{"specs", servers.CreateInput{Name: "a", Region: "eu", Specs: json.RawMessage(`{"x":"` + strings.Repeat("y", 9000) + `"}`)}},
	} {
		_, err := e.svc.Create(admin, c.in)
		var pe *fault.Error
		if !errors.As(err, &pe) || pe.Code != fault.CodeInvalid || pe.Field != c.field {
			t.Errorf("%+v: %v, want INVALID on %s", c.in, err, c.field)
		}
	}
	_, err := e.svc.Create(catalogtest.User("u"), servers.CreateInput{Name: "a", Region: "eu"})
	if code(err) != fault.CodeForbidden {
		t.Fatalf("user create: %v", err)
	}
	if l, _ := e.svc.Available(catalogtest.User("u")); len(l) != 0 {
		t.Fatalf("bad creates left %v", l)
	}
}

func TestMarketplaceRentAndVisibility(t *testing.T) {
	e := newEnv(t)
	free := e.create(t, "free-box", "eu-west", "0")
	big := e.create(t, "big-box", "eu-west", "25.00")
	us := e.create(t, "us-box", "us-east", "5")
	if free.Status != "available" || big.Price != money.Number(2500) || string(big.Specs) != `{"cpu":4,"memory_gb":16}` || !strings.HasPrefix(big.ID, "srv_") {
		t.Fatalf("created %+v", big)
	}
	evs, _ := events.NewLog(e.db, e.clock).All()
	if len(evs) != 3 || evs[0].EventType != "server.created" || evs[0].ResourceType != "server" {
		t.Fatalf("events %+v", evs)
	}
	alice, bob := catalogtest.User("alice"), catalogtest.User("bob")
	if got, _ := e.svc.Available(alice); names(got) != "free-box,big-box,us-box" {
		t.Fatalf("marketplace %q", names(got))
	}

	// Renting a free server charges nothing and records no transaction.
	res, err := e.svc.Rent(alice, servers.ServerRef{ID: free.ID})
	if err != nil || res.PricePaid != 0 || res.RemainingBalance != nil || res.Server.Status != "rented" || res.Server.RenterID != "alice" ||
		res.Server.RentedUntil != "2026-03-31T12:00:00.000Z" {
		t.Fatalf("rent free %+v %v", res, err)
	}
	// A priced server needs the balance; a refusal leaves it on offer.
	_, err = e.svc.Rent(alice, servers.ServerRef{ID: big.ID})
	if code(err) != fault.CodeBadRequest || !strings.Contains(err.Error(), "insufficient") {
		t.Fatalf("rent without balance: %v", err)
	}
	catalogtest.Credit(t, e.db, e.wallet, "alice", 3000)
	res, err = e.svc.Rent(alice, servers.ServerRef{ID: big.ID})
	if err != nil || res.PricePaid != 2500 || res.RemainingBalance == nil || *res.RemainingBalance != 500 {
		t.Fatalf("rent priced %+v %v", res, err)
	}
	if bal, ledger := catalogtest.Balance(t, e.wallet, "alice"); bal != 500 || len(ledger) != 1 || ledger[0].TransactionType != "server_rental" || ledger[0].Reference != big.ID {
		t.Fatalf("ledger %s %+v", bal, ledger)
	}
	// Rented servers leave the marketplace; they are alice's alone.
	if got, _ := e.svc.Available(bob); names(got) != "us-box" {
		t.Fatalf("marketplace after rent %q", names(got))
	}
	if got, _ := e.svc.Mine(alice); names(got) != "free-box,big-box" {
		t.Fatalf("alice's servers %q", names(got))
	}
	if got, _ := e.svc.Mine(bob); len(got) != 0 {
		t.Fatalf("bob's servers %v", got)
	}
	// Another user's rental does not exist for bob, for renting as for
	// reading: the answer is the unknown server's, so neither reveals it.
	_, rentErr := e.svc.Rent(bob, servers.ServerRef{ID: big.ID})
	_, getErr := e.svc.Get(bob, servers.ServerRef{ID: big.ID})
	_, unknownErr := e.svc.Rent(bob, servers.ServerRef{ID: "srv_000000000000000000000000"})
	if code(rentErr) != fault.CodeNotFound || rentErr.Error() != getErr.Error() ||
		strings.ReplaceAll(rentErr.Error(), big.ID, "ID") != strings.ReplaceAll(unknownErr.Error(), "srv_000000000000000000000000", "ID") {
		t.Fatalf("bob rents alice's: %v (reading it: %v; an unknown server: %v)", rentErr, getErr, unknownErr)
	}
	if _, err := e.svc.Rent(admin, servers.ServerRef{ID: big.ID}); code(err) != fault.CodeConflict {
		t.Fatalf("an admin, who sees the rental, renting it: %v", err)
	}
	if _, err := e.svc.Rent(alice, servers.ServerRef{ID: big.ID}); code(err) != fault.CodeConflict {
		t.Fatalf("alice rents again: %v", err)
	}
	if _, err := e.svc.Get(bob, servers.ServerRef{ID: big.ID}); code(err) != fault.CodeNotFound {
		t.Fatalf("bob reads alice's rental: %v", err)
	}
	if v, err := e.svc.Get(alice, servers.ServerRef{ID: big.ID}); err != nil || v.RenterID != "alice" {
		t.Fatalf("alice reads hers: %+v %v", v, err)
	}
	if v, err := e.svc.Get(admin, servers.ServerRef{ID: big.ID}); err != nil || v.RenterID != "alice" {
		t.Fatalf("admin reads: %+v %v", v, err)
	}
	if v, err := e.svc.Get(bob, servers.ServerRef{ID: us.ID}); err != nil || v.Status != "available" || v.RenterID != "" {
		t.Fatalf("bob reads an offer: %+v %v", v, err)
	}
	if _, err := e.svc.Get(bob, servers.ServerRef{ID: "srv_000000000000000000000000"}); code(err) != fault.CodeNotFound {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := e.svc.Get(bob, servers.ServerRef{ID: "srv_nope"}); code(err) != fault.CodeInvalid {
		t.Fatalf("malformed: %v", err)
	}
	if _, err := e.svc.Rent(bob, servers.ServerRef{ID: "42"}); code(err) != fault.CodeInvalid {
		t.Fatalf("malformed rent: %v", err)
	}
	if _, err := e.svc.Rent(bob, servers.ServerRef{ID: "srv_000000000000000000000000"}); code(err) != fault.CodeNotFound {
		t.Fatalf("unknown rent: %v", err)
	}
	// When the rental ends the server is back on offer.
	e.clock.Advance(servers.RentalPeriod)
	if got, _ := e.svc.Available(bob); names(got) != "free-box,big-box,us-box" {
		t.Fatalf("marketplace after the rentals ended %q", names(got))
	}
	if got, _ := e.svc.Mine(alice); len(got) != 0 {
		t.Fatalf("ended rentals still listed %v", got)
	}
	if _, err := e.svc.Rent(bob, servers.ServerRef{ID: free.ID}); err != nil {
		t.Fatal(err)
	}
	var rented int
	evs, _ = events.NewLog(e.db, e.clock).All()
	for _, ev := range evs {
		if ev.EventType == "server.rented" {
			rented++
		}
	}
	if rented != 3 {
		t.Fatalf("%d server.rented events, want 3", rented)
	}
}

// Many users racing for one server: exactly one rents it and pays.
func TestRentRace(t *testing.T) {
	e := newEnv(t)
	srv := e.create(t, "hot", "eu", "1")
	users := []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9"}
	for _, u := range users {
		catalogtest.Credit(t, e.db, e.wallet, u, 100)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.Rent(catalogtest.User(u), servers.ServerRef{ID: srv.ID})
			mu.Lock()
			defer mu.Unlock()
			switch code(err) {
			case "":
				won++
			case fault.CodeNotFound: // another user's rental
				lost++
			default:
				t.Errorf("rent: %v", err)
			}
		}()
	}
	wg.Wait()
	paid := 0
	for _, u := range users {
		if bal, _ := catalogtest.Balance(t, e.wallet, u); bal == 0 {
			paid++
		}
	}
	if won != 1 || lost != 9 || paid != 1 {
		t.Fatalf("won %d lost %d paid %d", won, lost, paid)
	}
}
