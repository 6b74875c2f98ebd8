package notifications_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/notifications"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

var engine storetest.Engine

func TestMain(m *testing.M) { storetest.Main(m, &engine) }

func as(userID, role string) context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: userID, Role: role, Kind: auth.KindSession, SessionID: "s-" + userID})
}

// Racing reads of one user mark each notification once: exactly one
// notification.read event per notification, whoever wins.
func TestConcurrentReadsRecordEachReadOnce(t *testing.T) {
	t.Parallel()
	db, _ := engine.Open(t)
	clock := clockpkg.NewFakeClock(time.Now())
	log := events.NewLog(db, clock)
	if err := log.Declare(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := notifications.New(domain.Env[domain.NoConfig]{Name: "notifications", Store: db, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Events: log, Authz: domain.NewAuthorizer()})
	if err != nil {
		t.Fatal(err)
	}
	admin := as("root", auth.RoleAdmin)
	var ids []string
	for i := 0; i < 12; i++ {
		in := notifications.CreateInput{Title: "n", Body: "b"}
		if i%3 == 0 {
			in.UserID = "ann"
		}
		if i%3 == 1 {
			in.UserID = "bob"
		}
		n, err := s.Create(admin, in)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if n.UserID == nil || *n.UserID == "ann" {
			ids = append(ids, n.ID)
		}
	}
	ann := as("ann", auth.RoleUser)
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if w%2 == 0 {
				if _, err := s.MarkAllRead(ann); err != nil {
					t.Error(err)
				}
				return
			}
			for _, id := range ids {
				if _, err := s.MarkRead(ann, notifications.NotificationRef{ID: id}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	var page events.Page
	_ = db.View(func(tx *store.Tx) error {
		page, err = events.Find(tx, events.Filter{EventType: events.NotificationRead}, &events.Viewer{UserID: "ann"}, events.Sort{}, 0, 100)
		return err
	})
	if err != nil || page.Total != len(ids) {
		t.Fatalf("%d notification.read events for %d notifications (%v)", page.Total, len(ids), err)
	}
	l, err := s.Mine(ann, notifications.ListInput{Limit: 100})
	if err != nil || *l.Unread != 0 || l.Total != len(ids) {
		t.Fatalf("ann after reading: %+v %v", l, err)
	}
	l, _ = s.Mine(as("bob", auth.RoleUser), notifications.ListInput{Limit: 100})
	if *l.Unread != 8 || l.Total != 8 {
		t.Fatalf("bob: %d notifications, %d unread", l.Total, *l.Unread)
	}
	if _, err := s.MarkRead(as("bob", auth.RoleUser), notifications.NotificationRef{ID: ids[0]}); fault.AsError(err).Code != fault.CodeNotFound && ids[0] != "" {
		// ids[0] is ann's own (i = 0): bob may not read it.
		t.Fatalf("bob reading ann's: %v", err)
	}
}
