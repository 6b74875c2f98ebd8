package events_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"deckhand/control/events"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// engine is the store engine of this run: TestMain runs every test on
// bbolt, then on PostgreSQL.
var engine storetest.Engine

func TestMain(m *testing.M) { storetest.Main(m, &engine) }

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// fill appends n events with fields drawn from small sets, a minute apart.
func fill(t *testing.T, db *store.DB, n int) []events.Event {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(prefix string, k int) string {
		i := rng.IntN(k + 1)
		if i == k {
			return ""
		}
		return fmt.Sprintf("%s%d", prefix, i)
	}
	var out []events.Event
	for len(out) < n {
		err := db.Update(func(tx *store.Tx) error {
			for i := 0; i < 100 && len(out) < n; i++ {
				at := t0.Add(time.Duration(len(out)) * time.Minute)
				ev, err := events.Append(tx, at, events.Event{EventType: events.Kinds[rng.IntN(6)], ResourceType: events.ResContainer,
					ResourceID: pick("r", 5), ProjectID: pick("p", 4), ContainerID: pick("c", 7), RealmID: pick("m", 2),
					UserID: pick("u", 3), ActorID: pick("u", 4)})
				if err != nil {
					return err
				}
				out = append(out, ev)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// brute is what Find must answer, computed over every event.
func brute(all []events.Event, f events.Filter, v *events.Viewer, o events.Sort) []string {
	var sel []events.Event
	for i := range all {
		if f.Matches(&all[i]) && v.Sees(&all[i]) {
			sel = append(sel, all[i])
		}
	}
	sort.SliceStable(sel, func(i, j int) bool {
		a, b := sel[i], sel[j]
		if o.Desc {
			a, b = b, a
		}
		if o.ByType && a.EventType != b.EventType {
			return a.EventType < b.EventType
		}
		return a.ID < b.ID
	})
	ids := make([]string, len(sel))
	for i, e := range sel {
		ids[i] = e.ID
	}
	return ids
}

// openDeclared is a store of this run's engine with the log's table.
func openDeclared(t testing.TB) *store.DB {
	t.Helper()
	db, _ := engine.Open(t)
	if err := db.Declare(context.Background(), events.Tables...); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestFindAgreesWithAFullScan(t *testing.T) {
	t.Parallel()
	db := openDeclared(t)
	all := fill(t, db, 700)
	member := func(p string) bool { return p == "p1" || p == "p3" }
	viewers := []func() *events.Viewer{
		func() *events.Viewer { return &events.Viewer{All: true} },
		func() *events.Viewer { return &events.Viewer{UserID: "u1"} },
		func() *events.Viewer { return &events.Viewer{UserID: "u2", Project: member} },
	}
	filters := []events.Filter{{}, {ContainerID: "c2"}, {ProjectID: "p1"}, {ProjectID: "p0"}, {EventType: events.Kinds[2]},
		{ResourceID: "r3", RealmID: "m1"}, {Start: t0.Add(100 * time.Minute), End: t0.Add(400 * time.Minute)},
		{ContainerID: "c4", Start: t0.Add(200 * time.Minute)}, {RealmID: "m0", End: t0.Add(300*time.Minute + time.Second)},
		{ResourceType: events.ResContainer, EventType: events.Kinds[0]},
		{ResourceType: events.ResContainer}} // every event: candidates in more than one batch
	for vi, mk := range viewers {
		for fi, f := range filters {
			for _, o := range []events.Sort{{}, {Desc: true}, {ByType: true}, {ByType: true, Desc: true}} {
				want := brute(all, f, mk(), o)
				for _, pg := range [][2]int{{0, 500}, {0, 7}, {13, 50}, {len(want) - 3, 10}} {
					if pg[0] < 0 {
						continue
					}
					var page events.Page
					err := db.View(func(tx *store.Tx) error {
						var err error
						page, err = events.Find(tx, f, mk(), o, pg[0], pg[1])
						return err
					})
					if err != nil {
						t.Fatal(err)
					}
					end := min(pg[0]+pg[1], len(want))
					if page.Total != len(want) || len(page.Events) != end-min(pg[0], end) {
						t.Fatalf("viewer %d filter %d sort %+v page %v: total %d (want %d), %d events", vi, fi, o, pg, page.Total, len(want), len(page.Events))
					}
					for i, ev := range page.Events {
						if ev.ID != want[pg[0]+i] {
							t.Fatalf("viewer %d filter %d sort %+v page %v: event %d is %s, want %s", vi, fi, o, pg, i, ev.ID, want[pg[0]+i])
						}
					}
				}
				var st events.Stats
				if err := db.View(func(tx *store.Tx) error {
					var err error
					st, err = events.Count(tx, events.Filter{Start: f.Start, End: f.End, RealmID: f.RealmID}, mk())
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if n := len(brute(all, events.Filter{Start: f.Start, End: f.End, RealmID: f.RealmID}, mk(), o)); st.Total != n {
					t.Fatalf("viewer %d filter %d: stats total %d, want %d", vi, fi, st.Total, n)
				}
			}
		}
	}
}

func TestDeleteMatchingIsExactAndLeavesNoIndexEntries(t *testing.T) {
	t.Parallel()
	db := openDeclared(t)
	all := fill(t, db, 1600)
	clock := clockpkg.NewFakeClock(t0.Add(1600 * time.Minute))
	log := events.NewLog(db, clock)
	for _, f := range []events.Filter{{ContainerID: "c3", RealmID: "m1"}, {EventType: events.Kinds[1]}, {End: t0.Add(700 * time.Minute)}} {
		want := 0
		for i := range all {
			if f.Matches(&all[i]) && all[i].ID != "" {
				want++
				all[i].ID = "" // deleted
			}
		}

		got, err := log.DeleteMatching(context.Background(), f)
		if err != nil || got != want {
			t.Fatalf("%+v: deleted %d, want %d (%v)", f, got, want, err)
		}
	}
	left := 0
	for _, e := range all {
		if e.ID != "" {
			left++
		}
	}
	var page events.Page
	_ = db.View(func(tx *store.Tx) error {
		page, _ = events.Find(tx, events.Filter{}, &events.Viewer{All: true}, events.Sort{}, 0, 1)
		return nil
	})
	if page.Total != left {
		t.Fatalf("%d left, want %d", page.Total, left)
	}
	// Expire removes everything older than a day: all of it, bar the last day.
	n, err := log.Expire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range all {
		if e.ID != "" && e.CreatedAt.Before(clock.Now().Add(-24*time.Hour)) {
			want++
		}
	}
	if n != want {
		t.Fatalf("expire: %d, want %d", n, want)
	}
	if _, err := log.DeleteMatching(context.Background(), events.Filter{}); err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *store.Tx) error {
		if n := tx.Count(events.Bucket); n != 0 {
			t.Errorf("%d events left after deleting all", n)
		}
		// No index answers for an event that is gone.
		for _, f := range []events.Filter{{ContainerID: "c3"}, {EventType: events.Kinds[1]}, {ProjectID: "p1"}, {RealmID: "m0"}, {ResourceID: "r2"}} {
			page, err := events.Find(tx, f, &events.Viewer{All: true}, events.Sort{}, 0, 10)
			if err != nil || page.Total != 0 || len(page.Events) != 0 {
				t.Errorf("%+v after deleting all: %d, %v", f, page.Total, err)
			}
		}
		page, err := events.Find(tx, events.Filter{}, &events.Viewer{UserID: "u1"}, events.Sort{}, 0, 10)
		if err != nil || page.Total != 0 {
			t.Errorf("a user's list after deleting all: %d, %v", page.Total, err)
		}
		return nil
	})
}
