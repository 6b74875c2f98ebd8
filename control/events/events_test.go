package events_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"deckhand/control/events"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/store"
)

func open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "control.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Declare(context.Background(), events.Tables...); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestEventsCommitAndRollBackWithTheirChange(t *testing.T) {
	t.Parallel()
	db := open(t)
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	log := events.NewLog(db, clock)

	// The recorded change and its event commit together ...
	err := db.Update(func(tx *store.Tx) error {
		if err := tx.Put("users", "u1", map[string]string{"role": "admin"}); err != nil {
			return err
		}
		_, err := log.Append(tx, events.Event{EventType: "user.role_changed", ResourceType: "user", ResourceID: "u1",
			Payload: events.Payload(map[string]string{"role": "admin"})})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// ... and a failed change leaves no event behind.
	boom := errors.New("balance check failed")
	err = db.Update(func(tx *store.Tx) error {
		if _, err := log.Append(tx, events.Event{EventType: "user.banned", ResourceType: "user", ResourceID: "u1"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if _, err := log.Record(events.Event{EventType: "activity.logged", ResourceType: "activity_log", ResourceID: "a1"}); err != nil {
		t.Fatal(err)
	}

	all, err := log.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("%d events, want 2 (the rolled-back one must not exist): %+v", len(all), all)
	}
	if all[0].EventType != "user.role_changed" || all[1].EventType != "activity.logged" {
		t.Fatalf("order: %s, %s", all[0].EventType, all[1].EventType)
	}
	if all[0].ID == all[1].ID || all[0].ID == "" {
		t.Fatalf("ids %q %q", all[0].ID, all[1].ID)
	}
	if !all[0].CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || !all[1].CreatedAt.Equal(all[0].CreatedAt.Add(time.Minute)) {
		t.Fatalf("times from the injected clock: %v %v", all[0].CreatedAt, all[1].CreatedAt)
	}
	if string(all[0].Payload) != `{"role":"admin"}` {
		t.Fatalf("payload %s", all[0].Payload)
	}
}

func TestListOfEmptyLog(t *testing.T) {
	t.Parallel()
	all, err := events.NewLog(open(t), nil).All()
	if err != nil || len(all) != 0 {
		t.Fatalf("empty log: %v %v", all, err)
	}
}

func TestEventsOfTheFirstLayoutAreIndexed(t *testing.T) {
	t.Parallel()
	db := open(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := db.Update(func(tx *store.Tx) error {
		for i := uint64(1); i <= 3; i++ {
			ev := events.Event{ID: "evt_" + store.SeqKey(i), EventType: "user.created", ResourceType: "user", ResourceID: "u1", CreatedAt: at}
			if err := tx.Put(events.Bucket, store.SeqKey(i), ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	log := events.NewLog(db, nil)
	if n, err := log.MigrateKeys(context.Background()); err != nil || n != 3 {
		t.Fatalf("moved %d, %v", n, err)
	}
	if n, _ := log.MigrateKeys(context.Background()); n != 0 {
		t.Fatalf("second run moved %d", n)
	}
	var page events.Page
	_ = db.View(func(tx *store.Tx) error {
		page, err = events.Find(tx, events.Filter{ResourceID: "u1"}, &events.Viewer{UserID: "u1"}, events.Sort{}, 0, 10)
		return err
	})
	if err != nil || page.Total != 3 || !page.Events[0].CreatedAt.Equal(at) || events.KeyOf(page.Events[0].ID) == "" {
		t.Fatalf("after migration: %+v %v", page, err)
	}
}

// TestEventsOfTheHandBuiltIndexLayout: a store of the layout before the
// declared table (the log's bucket with a bucket of hand-built index
// entries beside it) declares the table over the same events and drops
// the old entries; lists answer from the table's indexes.
func TestEventsOfTheHandBuiltIndexLayout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "control.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err = db.Update(func(tx *store.Tx) error {
		for i, c := range []string{"c1", "c2", "c1"} {
			key := fmt.Sprintf("%019d-%012x", at.Add(time.Duration(i)*time.Second).UnixNano(), i)
			ev := events.Event{ID: "evt_" + key, EventType: events.ContainerRunning, ResourceType: events.ResContainer,
				ResourceID: c, ContainerID: c, UserID: "u1", ActorID: "u1", CreatedAt: at.Add(time.Duration(i) * time.Second)}
			if err := tx.Put(events.Bucket, key, ev); err != nil {
				return err
			}
			for _, e := range []string{"type\x1f" + ev.EventType, "container\x1f" + c, "user\x1fu1"} {
				if err := tx.PutRaw("events_by", e+"\x1f"+key, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Declare(context.Background(), events.Tables...); err != nil {
		t.Fatal(err)
	}
	log := events.NewLog(db, nil)
	if dropped, err := log.DropLegacyIndex(context.Background()); err != nil || !dropped {
		t.Fatalf("drop: %v %v", dropped, err)
	}
	if dropped, _ := log.DropLegacyIndex(context.Background()); dropped {
		t.Fatal("dropped twice")
	}
	var page events.Page
	err = db.View(func(tx *store.Tx) error {
		if tx.Count("events_by") != 0 {
			t.Error("the hand-built index is still there")
		}
		page, err = events.Find(tx, events.Filter{ContainerID: "c1"}, &events.Viewer{UserID: "u1"}, events.Sort{Desc: true}, 0, 10)
		return err
	})
	if err != nil || page.Total != 2 || !page.Events[0].CreatedAt.Equal(at.Add(2*time.Second)) {
		t.Fatalf("list after the upgrade: %+v %v", page, err)
	}
}
