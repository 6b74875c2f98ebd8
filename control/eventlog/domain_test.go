package eventlog_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"deckhand/control/domain"
	"deckhand/control/eventlog"
	"deckhand/control/events"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

var engine storetest.Engine

func TestMain(m *testing.M) { storetest.Main(m, &engine) }

func newService(t *testing.T, cfg eventlog.Config, clock clockpkg.Clock) (*eventlog.Service, *domain.Authorizer, *store.DB) {
	t.Helper()
	db, _ := engine.Open(t)
	authz := domain.NewAuthorizer()
	env := domain.Env[eventlog.Config]{Name: "events", Store: db, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Events: events.NewLog(db, clock), Authz: authz, Config: cfg}
	s, err := eventlog.New(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, authz, db
}

func as(userID, role, kind string) context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: userID, Role: role, Kind: kind, TokenID: "t-" + userID, SessionID: "s-" + userID})
}

// The projects and containers domains' checks, as they will provide them:
// path parameters by name, FORBIDDEN when the caller is not admitted.
func provideChecks(authz *domain.Authorizer) {
	members := map[string]map[string]bool{"p1": {"ann": true}, "p2": {"bob": true}}
	containers := map[string]string{"c1": "p1", "c2": "p2"}
	authz.Provide(eventlog.CheckProjectMember, func(ctx context.Context, param func(string) string) error {
		p, _ := auth.FromContext(ctx)
		if members[param("id")][p.UserID] {
			return nil
		}
		return fault.Errorf(fault.CodeForbidden, "not a member")
	})
	authz.Provide(eventlog.CheckContainerAccess, func(ctx context.Context, param func(string) string) error {
		p, _ := auth.FromContext(ctx)
		if members[containers[param("container_id")]][p.UserID] {
			return nil
		}
		return fault.Errorf(fault.CodeForbidden, "no access to the container")
	})
}

func TestProjectMembersSeeProjectEventsAndAgentsReportOnlyTheirContainers(t *testing.T) {
	t.Parallel()
	s, authz, _ := newService(t, eventlog.Config{}, clockpkg.NewFakeClock(time.Now()))
	provideChecks(authz)
	ann := as("ann", auth.RoleUser, auth.KindToken)
	bob := as("bob", auth.RoleUser, auth.KindToken)
	// Ann's agent reports for c1 (her project p1), not for c2.
	if _, err := s.Ingest(ann, eventlog.IngestInput{EventType: events.ContainerRunning, ContainerID: "c1", ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ann, eventlog.IngestInput{EventType: events.ContainerRunning, ContainerID: "c2", ProjectID: "p2"}); fault.AsError(err).Code != fault.CodeForbidden {
		t.Fatalf("ann reporting for c2: %v", err)
	}
	// c1 in another project than its own is refused too.
	if _, err := s.Ingest(ann, eventlog.IngestInput{EventType: events.ContainerRunning, ContainerID: "c1", ProjectID: "p2"}); fault.AsError(err).Code != fault.CodeForbidden {
		t.Fatalf("ann claiming p2: %v", err)
	}
	// An admin's event about p1, owned by nobody in particular.
	admin := as("root", auth.RoleAdmin, auth.KindSession)
	if _, err := s.Report(admin, eventlog.IngestInput{EventType: events.FirewallRuleAdded, ResourceID: "fw1", ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	list := func(ctx context.Context, f eventlog.FilterInput) int {
		l, err := s.List(ctx, eventlog.ListInput{Limit: 100, FilterInput: f})
		if err != nil {
			t.Fatal(err)
		}
		return l.Pagination.Total
	}
	if n := list(ann, eventlog.FilterInput{}); n != 2 {
		t.Fatalf("ann sees %d events, want her own and p1's firewall event", n)
	}
	if n := list(bob, eventlog.FilterInput{}); n != 0 {
		t.Fatalf("bob sees %d events of p1", n)
	}
	if n := list(bob, eventlog.FilterInput{ProjectID: "p1"}); n != 0 {
		t.Fatalf("bob filtering p1 sees %d", n)
	}
	if n := list(ann, eventlog.FilterInput{ProjectID: "p1", EventType: events.FirewallRuleAdded}); n != 1 {
		t.Fatalf("ann p1 firewall: %d", n)
	}
	// A session is no agent.
	if _, err := s.Ingest(as("ann", auth.RoleUser, auth.KindSession), eventlog.IngestInput{EventType: events.ContainerRunning, ContainerID: "c1"}); fault.AsError(err).Code != fault.CodeForbidden {
		t.Fatalf("session ingest: %v", err)
	}
}

func TestRetentionJobDeletesOldEventsInTheBackground(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	clock := clockpkg.NewFakeClock(now)
	db, _ := engine.Open(t)
	log := events.NewLog(db, clock)
	err := db.Update(func(tx *store.Tx) error {
		for i := 0; i < 1200; i++ {
			_, err := log.Append(tx, events.Event{EventType: events.ActivityLogged, ResourceType: events.ResActivityLog,
				ResourceID: "a", CreatedAt: now.Add(-time.Duration(i) * time.Hour)})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	env := domain.Env[eventlog.Config]{Name: "events", Store: db, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Events: log, Authz: domain.NewAuthorizer(), Config: eventlog.Config{RetentionDays: 10, RetentionEvery: 20 * time.Millisecond}}
	s, err := eventlog.New(env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		_ = db.View(func(tx *store.Tx) error { n = tx.Count(events.Bucket); return nil })
		if n == 10*24+1 {
			break // hours 0..240: the one exactly 10 days old is not older
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events left, want %d", n, 10*24+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A writer is not held up while it runs: appends go through.
	if err := db.Update(func(tx *store.Tx) error {
		_, err := log.Append(tx, events.Event{EventType: events.ActivityLogged, ResourceType: events.ResActivityLog, ResourceID: "b"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
