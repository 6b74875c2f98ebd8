package projects_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/control/projects"
	"deckhand/platform/auth"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/proxyperm"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	platformtest.StopPostgres()
	os.Exit(code)
}

type env struct {
	svc   *projects.Service
	authz *domain.Authorizer
}

// newEnv builds the domain on db; the accounts "alice", "bob" and
// "carol" exist (identity's user.exists check, stood in for here).
func newEnv(t *testing.T, open storetest.Opener) *env {
	db, _ := open(t)
	sealer, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	authz := domain.NewAuthorizer()
	authz.Provide("user.exists", func(_ context.Context, param func(string) string) error {
		switch param("user_id") {
		case "alice", "bob", "carol":
			return nil
		}
		return fault.NotFound("user", param("user_id"))
	})
	svc, err := projects.New(domain.Env[projects.Config]{Name: "projects", Store: db, Clock: clock, Events: events.NewLog(db, clock),
		Authz: authz, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Config: projects.Config{Sealer: sealer}})
	if err != nil {
		t.Fatal(err)
	}
	_ = svc.Routes() // declares the policies
	if m := authz.Missing(); len(m) != 0 {
		t.Fatalf("missing checks: %v", m)
	}
	return &env{svc: svc, authz: authz}
}

func as(user string) context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: user, Role: auth.RoleUser, Kind: auth.KindSession})
}

func admin() context.Context {
	return auth.NewContext(context.Background(), &auth.Principal{UserID: "root", Role: auth.RoleAdmin, Kind: auth.KindSession})
}

func code(err error) string {
	var pe *fault.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	if err == nil {
		return ""
	}
	return "untyped: " + err.Error()
}

// The checks answer 400 (malformed id, no lookup), then 404 (unknown), then
// 403 (exists, not permitted), and pass by role.
func TestResourceChecksOrderAndRoles(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, eng.Open)
			p, err := e.svc.CreateProject(as("alice"), projects.ProjectInput{Name: "P"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.AdminCreateContainer(admin(), projects.AdminContainerInput{ProjectID: p.ID, Name: "c", ID: "c1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Grant(as("alice"), projects.GrantRequest{ProjectRef: projects.ProjectRef{ID: p.ID}, Body: projects.GrantInput{UserID: "bob", Role: projects.RoleViewer}}); err != nil {
				t.Fatal(err)
			}
			check := func(name, user, id string) string {
				return code(e.authz.Policy(name, "").Check(as(user), func(string) string { return id }))
			}
			for _, c := range []struct {
				check, user, id, want string
			}{
				{projects.CheckContainerAccess, "carol", "Bad-Id", fault.CodeInvalid},
				{projects.CheckContainerAccess, "carol", "nosuch", fault.CodeNotFound},
				{projects.CheckContainerAccess, "carol", "c1", fault.CodeForbidden},
				{projects.CheckContainerAccess, "bob", "c1", fault.CodeForbidden},
				{projects.CheckContainerRead, "bob", "c1", ""},
				{projects.CheckContainerAccess, "alice", "c1", ""},
				{projects.CheckProjectMember, "carol", p.ID, fault.CodeForbidden},
				{projects.CheckProjectMember, "bob", p.ID, ""},
				{projects.CheckProjectManager, "bob", p.ID, fault.CodeForbidden},
				{projects.CheckProjectOwner, "alice", p.ID, ""},
				{projects.CheckProjectMember, "alice", "zzzz", fault.CodeNotFound},
				{projects.CheckProjectMember, "alice", "", fault.CodeInvalid},
				{projects.CheckContainerAccess, "root", "c1", fault.CodeForbidden}, // admins get no implicit access
			} {
				if got := check(c.check, c.user, c.id); got != c.want {
					t.Errorf("%s %s %q: %q, want %q", c.check, c.user, c.id, got, c.want)
				}
			}
			if _, err := e.svc.Grant(as("alice"), projects.GrantRequest{ProjectRef: projects.ProjectRef{ID: p.ID}, Body: projects.GrantInput{UserID: "dave", Role: projects.RoleViewer}}); code(err) != fault.CodeInvalid {
				t.Fatalf("unknown user: %v", err)
			}
		})
	}
}

func TestProxyCredentialsSealedAndKept(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, eng.Open)
			p, _ := e.svc.CreateProject(as("alice"), projects.ProjectInput{Name: "P"})
			if _, err := e.svc.AdminCreateContainer(admin(), projects.AdminContainerInput{ProjectID: p.ID, Name: "c", ID: "c1"}); err != nil {
				t.Fatal(err)
			}
			ctx := as("alice")
			if _, err := e.svc.PutNetwork(ctx, projects.NetworkPut{ContainerRef: projects.ContainerRef{ID: "c1"}, Body: projects.NetworkInput{Type: "http", Proxy: "http://u%40x:p%3Aw@h.example:3128"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.PutNetwork(ctx, projects.NetworkPut{ContainerRef: projects.ContainerRef{ID: "c1"}, Body: projects.NetworkInput{Type: "http", Proxy: "http://H.example:3128"}}); err != nil {
				t.Fatal(err)
			}
			u, pw, ok, err := e.svc.ProxyCredentials(ctx, "c1")
			if err != nil || !ok || u != "u@x" || pw != "p:w" {
				t.Fatalf("credentials %q %q %v %v", u, pw, ok, err)
			}
			if _, err := e.svc.PutNetwork(ctx, projects.NetworkPut{ContainerRef: projects.ContainerRef{ID: "c1"}, Body: projects.NetworkInput{Type: "block"}}); err != nil {
				t.Fatal(err)
			}
			if _, _, ok, _ := e.svc.ProxyCredentials(ctx, "c1"); ok {
				t.Fatal("block kept the credentials")
			}
		})
	}
}

// Two replicas (two stores on one database; one store on bbolt) race 50
// writers with the same If-Match version: exactly one wins per round and
// no winner's group is lost.
func TestIfMatchRaceAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			db, reopen := eng.Open(t)
			a := newEnv(t, func(testing.TB) (*store.DB, func() *store.DB) { return db, reopen })
			second := reopen()
			b := newEnv(t, func(testing.TB) (*store.DB, func() *store.DB) { return second, reopen })
			p, _ := a.svc.CreateProject(as("alice"), projects.ProjectInput{Name: "P"})
			if _, err := a.svc.AdminCreateContainer(admin(), projects.AdminContainerInput{ProjectID: p.ID, Name: "c", ID: "c1"}); err != nil {
				t.Fatal(err)
			}
			const writers, rounds = 50, 3
			var winners []string
			for round := 0; round < rounds; round++ {
				var wg sync.WaitGroup
				errs := make([]error, writers)
				for w := 0; w < writers; w++ {
					svc := a.svc
					if w%2 == 1 {
						svc = b.svc
					}
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						_, errs[w] = svc.PutContainerGroup(as("alice"), "c1", int64(round), fmt.Sprintf("r%dw%d", round, w),
							proxyperm.Group{Type: "ip", Range: "10.0.0.0/8"})
					}(w)
				}
				wg.Wait()
				won := 0
				for w, err := range errs {
					switch code(err) {
					case "":
						won++
						winners = append(winners, fmt.Sprintf("r%dw%d", round, w))
					case fault.CodePreconditionFailed:
					default:
						t.Fatalf("writer %d: %v", w, err)
					}
				}
				if won != 1 {
					t.Fatalf("round %d: %d winners", round, won)
				}
			}
			var d proxyperm.Document
			if err := second.View(func(tx *store.Tx) error { _, err := tx.Get("projects_proxyperm", "c/c1", &d); return err }); err != nil {
				t.Fatal(err)
			}
			if d.FileVersion != rounds || len(d.Groups) != rounds {
				t.Fatalf("version %d, %d groups", d.FileVersion, len(d.Groups))
			}
			for _, w := range winners {
				if _, ok := d.Groups[w]; !ok {
					t.Fatalf("lost update %s", w)
				}
			}
		})
	}
}

// The lists and the stats read their records in batches: every project
// with the caller's role, every container, and the stats' networks and
// proxy documents, per container.
func TestListsAndStatsReadEveryRecord(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, eng.Open)
			mk := func(owner, name string) string {
				p, err := e.svc.CreateProject(as(owner), projects.ProjectInput{Name: name})
				if err != nil {
					t.Fatal(err)
				}
				return p.ID
			}
			a1, a2, a3, b1 := mk("alice", "A1"), mk("alice", "A2"), mk("alice", "A3"), mk("bob", "B1")
			grant := func(pid, role string) string {
				p, err := e.svc.Grant(as("alice"), projects.GrantRequest{ProjectRef: projects.ProjectRef{ID: pid}, Body: projects.GrantInput{UserID: "bob", Role: role}})
				if err != nil {
					t.Fatal(err)
				}
				return p.ID
			}
			grant(a1, projects.RoleViewer)
			grant(a2, projects.RoleManager)
			if err := e.svc.Revoke(as("alice"), projects.PermissionRef{ProjectRef: projects.ProjectRef{ID: a3}, PermissionID: grant(a3, projects.RoleOperator)}); err != nil {
				t.Fatal(err)
			}
			list, err := e.svc.ListProjects(as("bob"), projects.PageInput{Page: 1, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			roles := map[string]string{}
			for _, p := range list.Projects {
				roles[p.ID] = p.Role
			}
			if want := map[string]string{a1: "viewer", a2: "manager", b1: "owner"}; !reflect.DeepEqual(roles, want) || list.Pagination.Total != 3 {
				t.Fatalf("bob's projects %v (total %d), want %v", roles, list.Pagination.Total, want)
			}
			if list, err := e.svc.ListProjects(as("alice"), projects.PageInput{Page: 1, Limit: 100}); err != nil || len(list.Projects) != 3 {
				t.Fatalf("alice's projects: %v %v", list, err)
			}

			var ids []string
			for i := range 5 {
				id := fmt.Sprintf("c%d", i)
				if _, err := e.svc.AdminCreateContainer(admin(), projects.AdminContainerInput{ProjectID: a1, Name: id, ID: id}); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for _, id := range ids[:3] {
				if _, err := e.svc.PutNetwork(as("alice"), projects.NetworkPut{ContainerRef: projects.ContainerRef{ID: id}, Body: projects.NetworkInput{Type: "block"}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.svc.SetNetworkRunning(as("alice"), ids[1], true); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids[2:4] {
				if _, err := e.svc.PutContainerGroup(as("alice"), id, 0, "g", proxyperm.Group{Type: "ip", Range: "10.0.0.0/8"}); err != nil {
					t.Fatal(err)
				}
			}
			cl, err := e.svc.ListContainers(as("bob"), projects.ContainerListInput{ProjectRef: projects.ProjectRef{ID: a1}, PageInput: projects.PageInput{Page: 1, Limit: 3}})
			if err != nil || cl.Pagination.Total != 5 || len(cl.Containers) != 3 || cl.Containers[0].ID != "c0" || cl.Containers[2].ID != "c2" {
				t.Fatalf("containers: %+v %v", cl, err)
			}
			st, err := e.svc.ProjectStats(as("bob"), projects.ProjectRef{ID: a1})
			if err != nil {
				t.Fatal(err)
			}
			want := &projects.Stats{ProjectID: a1, Containers: 5, ByStatus: map[string]int{"creating": 5}, Members: 2,
				ByRole: map[string]int{"owner": 1, "viewer": 1}, Networks: 3, NetsRunning: 1, ProxyDocuments: 2}
			if !reflect.DeepEqual(st, want) {
				t.Fatalf("stats %+v, want %+v", st, want)
			}
		})
	}
}
