package eventse2e_test

import (
	"net/url"
	"sort"
	"testing"
	"time"

	"deckhand/control/controltest"
)

func TestFiltersAndPaginationOverThousandsOfEvents(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	admin := s.Admin()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	all := seed(t, s, admin, 2500, base, time.Minute)
	mid := base.Add(-1000 * time.Minute)
	early := base.Add(-2000 * time.Minute)
	cases := []struct {
		name string
		q    url.Values
		keep func(seeded) bool
	}{
		{"container", url.Values{"container_id": {"c3"}}, func(e seeded) bool { return e.Container == "c3" }},
		{"project", url.Values{"project_id": {"p1"}}, func(e seeded) bool { return e.Project == "p1" }},
		{"realm", url.Values{"realm_id": {"r0"}}, func(e seeded) bool { return e.Realm == "r0" }},
		{"type", url.Values{"event_type": {"pool.invited"}}, func(e seeded) bool { return e.Type == "pool.invited" }},
		{"resource type", url.Values{"resource_type": {"firewall"}}, func(e seeded) bool { return e.Type == "firewall.rule.added" }},
		{"resource id", url.Values{"resource_id": {"res1"}}, func(e seeded) bool { return e.Resource == "res1" }},
		{"container and type", url.Values{"container_id": {"c5"}, "event_type": {"container.running"}},
			func(e seeded) bool { return e.Container == "c5" && e.Type == "container.running" }},
		{"dates", url.Values{"start_date": {early.Format(time.RFC3339Nano)}, "end_date": {mid.Format(time.RFC3339Nano)}},
			func(e seeded) bool { return !e.At.Before(early) && !e.At.After(mid) }},
		{"project and dates", url.Values{"project_id": {"p2"}, "start_date": {early.Format(time.RFC3339Nano)}},
			func(e seeded) bool { return e.Project == "p2" && !e.At.Before(early) }},
	}
	for _, c := range cases {
		want := expect(all, c.keep)
		for _, limit := range []int{500, 137} {
			got, total := listAll(t, s, admin, c.q, limit)
			// The admin's own login events are no admin/events: the
			// seeded ones alone carry these filters.
			if total != len(want) || !equal(got, want) {
				t.Fatalf("%s (limit %d): %d ids (total %d), want %d; first %v want %v", c.name, limit, len(got), total, len(want), head(got), head(want))
			}
		}
	}

	// Oldest first, and by kind then time.
	asc, _ := listAll(t, s, admin, url.Values{"container_id": {"c1"}, "sort_order": {"asc"}}, 500)
	want := expect(all, func(e seeded) bool { return e.Container == "c1" })
	for i := range want {
		if asc[i] != want[len(want)-1-i] {
			t.Fatalf("ascending order differs at %d", i)
		}
	}
	for _, q := range []url.Values{{"sort_by": {"event_type"}, "sort_order": {"asc"}, "realm_id": {"r1"}},
		{"sort_by": {"event_type"}, "sort_order": {"asc"}, "resource_type": {"container"}}} {
		got, _ := listAll(t, s, admin, q, 500)
		byID := map[string]seeded{}
		for _, e := range all {
			byID[e.ID] = e
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool {
			a, b := byID[got[i]], byID[got[j]]
			if a.Type != b.Type {
				return a.Type < b.Type
			}
			return a.At.Before(b.At)
		}) {
			t.Fatalf("%v: not ordered by event_type then created_at", q)
		}
	}

	// Stats totals equal list totals over the same dates and realm.
	for _, q := range []url.Values{{}, {"realm_id": {"r1"}}, {"start_date": {early.Format(time.RFC3339Nano)}, "end_date": {mid.Format(time.RFC3339Nano)}}} {
		st := controltest.Data(s.MustDo(200, "GET", "/api/v1/events/stats?"+q.Encode(), nil, admin))
		lq := url.Values{"limit": {"1"}}
		for k, v := range q {
			lq[k] = v
		}
		total := controltest.Data(s.MustDo(200, "GET", "/api/v1/events?"+lq.Encode(), nil, admin))["pagination"].(map[string]any)["total"].(float64)
		if st["total"].(float64) != total {
			t.Fatalf("stats %v: total %v, list total %v", q, st["total"], total)
		}
		sum := 0.0
		for _, n := range st["by_event_type"].(map[string]any) {
			sum += n.(float64)
		}
		rsum := 0.0
		for _, n := range st["by_resource_type"].(map[string]any) {
			rsum += n.(float64)
		}
		if sum != total || rsum != total {
			t.Fatalf("stats %v: by type sums to %v, by resource type %v, total %v", q, sum, rsum, total)
		}
	}
	st := controltest.Data(s.MustDo(200, "GET", "/api/v1/events/stats?realm_id=r0", nil, admin))
	if n := st["by_event_type"].(map[string]any)["pool.invited"].(float64); int(n) != len(expect(all, func(e seeded) bool { return e.Realm == "r0" && e.Type == "pool.invited" })) {
		t.Fatalf("pool.invited in r0: %v", n)
	}

	// One event; bad input.
	one := controltest.Data(s.MustDo(200, "GET", "/api/v1/events/"+all[7].ID, nil, admin))
	if one["container_id"] != all[7].Container || one["payload"].(map[string]any)["i"].(float64) != 7 {
		t.Fatalf("event: %v", one)
	}
	s.MustDo(404, "GET", "/api/v1/events/evt_nope", nil, admin)
	for _, q := range []string{"start_date=yesterday", "end_date=2026-13-01", "sort_by=id", "sort_order=up", "limit=501",
		"limit=0", "offset=-1", "start_date=2026-02-02&end_date=2026-02-01"} {
		s.MustDo(400, "GET", "/api/v1/events?"+q, nil, admin)
	}
	s.MustDo(400, "GET", "/api/v1/events/stats?start_date=31/12/2025", nil, admin)
	if d := controltest.Data(s.MustDo(200, "GET", "/api/v1/events?limit=500&container_id=c0", nil, admin)); len(d["events"].([]any)) != 250 {
		t.Fatalf("limit 500: %d events", len(d["events"].([]any)))
	}
	if d := controltest.Data(s.MustDo(200, "GET", "/api/v1/events", nil, admin)); len(d["events"].([]any)) != 100 ||
		d["pagination"].(map[string]any)["limit"].(float64) != 100 {
		t.Fatalf("default page: %v", d["pagination"])
	}
}

func head(ids []string) []string {
	if len(ids) > 3 {
		return ids[:3]
	}
	return ids
}

func TestAUserNeverSeesAnotherUsersEvents(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	admin := s.Admin()
	type acct struct{ token, id string }
	var users []acct
	for _, e := range []string{"ann@example.com", "bob@example.com"} {
		tok, id := s.Account(e)
		users = append(users, acct{tok, id})
		tk := controltest.Data(s.MustDo(201, "POST", "/api/v1/auth/tokens", map[string]any{"alias": "ci"}, tok))
		s.MustDo(200, "PATCH", "/api/v1/auth/tokens/"+tk["id"].(string), map[string]any{"is_enabled": false}, tok)
		s.MustDo(200, "DELETE", "/api/v1/auth/tokens/"+tk["id"].(string), nil, tok)
		// An admin-reported event owned by the user.
		s.MustDo(201, "POST", "/api/v1/admin/events", map[string]any{"event_type": "container.running", "container_id": "c-" + id,
			"user_id": id}, admin)
	}
	seen := map[string]string{} // event id → owner
	for i, u := range users {
		other := users[1-i]
		ids, total := listAll(t, s, u.token, url.Values{}, 3)
		if total < 5 {
			t.Fatalf("user %d sees %d events, want at least their signup, token and container events", i, total)
		}
		for _, id := range ids {
			ev := controltest.Data(s.MustDo(200, "GET", "/api/v1/events/"+id, nil, u.token))
			if ev["user_id"] != u.id && ev["actor_id"] != u.id {
				t.Fatalf("user %d sees %v", i, ev)
			}
			if ev["user_id"] == other.id || ev["actor_id"] == other.id {
				t.Fatalf("user %d sees the other's event %v", i, ev)
			}
			seen[id] = u.id
		}
		// Filters never widen the view: the other's container.
		if _, n := listAll(t, s, u.token, url.Values{"container_id": {"c-" + other.id}}, 100); n != 0 {
			t.Fatalf("user %d sees %d events of the other's container", i, n)
		}
		if _, n := listAll(t, s, u.token, url.Values{"container_id": {"c-" + u.id}}, 100); n != 1 {
			t.Fatalf("user %d sees %d events of their container", i, n)
		}
		st := controltest.Data(s.MustDo(200, "GET", "/api/v1/events/stats", nil, u.token))
		if int(st["total"].(float64)) != total {
			t.Fatalf("user %d: stats total %v, list total %d", i, st["total"], total)
		}
	}
	// Each one's events answer 404 to the other; the admin sees both.
	for id, owner := range seen {
		for _, u := range users {
			if u.id != owner {
				s.MustDo(404, "GET", "/api/v1/events/"+id, nil, u.token)
			}
		}
		s.MustDo(200, "GET", "/api/v1/events/"+id, nil, admin)
	}
	// Users delete and clean up nothing.
	s.MustDo(403, "POST", "/api/v1/events/cleanup", map[string]any{"retention_days": 30}, users[0].token)
	s.MustDo(403, "DELETE", "/api/v1/events", map[string]any{"all": true}, users[0].token)
	for id := range seen {
		s.MustDo(403, "DELETE", "/api/v1/events/"+id, nil, users[0].token)
		break
	}
}

func TestCleanupAndDeleteCountsAreExact(t *testing.T) {
	t.Parallel()
	s := controltest.Start(t)
	admin := s.Admin()
	now := time.Now().UTC()
	// 1200 events, one every 2 hours back from now: 100 days.
	all := seed(t, s, admin, 1200, now.Add(-time.Minute), 2*time.Hour)
	older := func(days int) int {
		n, cut := 0, now.Add(-time.Duration(days)*24*time.Hour)
		for _, e := range all {
			if e.At.Before(cut) {
				n++
			}
		}
		return n
	}
	for _, bad := range []map[string]any{{"retention_days": 0}, {"retention_days": 366}, {}, {"retention_days": "30"}} {
		s.MustDo(400, "POST", "/api/v1/events/cleanup", bad, admin)
	}
	want := older(60) // fixed before the call: the server's clock runs on
	d := controltest.Data(s.MustDo(200, "POST", "/api/v1/events/cleanup", map[string]any{"retention_days": 60}, admin))
	if int(d["deleted"].(float64)) != want {
		t.Fatalf("cleanup 60 days: deleted %v, want %d", d["deleted"], want)
	}
	left := len(all) - want

	for _, bad := range []any{map[string]any{}, map[string]any{"all": false}, map[string]any{"container_id": "c1"},
		map[string]any{"event_type": "pool.invited", "colour": "red"}, map[string]any{"before_date": "soon"}} {
		s.MustDo(400, "DELETE", "/api/v1/events", bad, admin)
	}
	kept := func(keep func(seeded) bool) int {
		n, cut := 0, now.Add(-60*24*time.Hour)
		for _, e := range all {
			if !e.At.Before(cut) && keep(e) {
				n++
			}
		}
		return n
	}
	byType := kept(func(e seeded) bool { return e.Type == "pool.invited" })
	d = controltest.Data(s.MustDo(200, "DELETE", "/api/v1/events", map[string]any{"event_type": "pool.invited"}, admin))
	if int(d["deleted"].(float64)) != byType {
		t.Fatalf("delete by type: %v, want %d", d["deleted"], byType)
	}
	left -= byType
	before := now.Add(-30 * 24 * time.Hour)
	both := kept(func(e seeded) bool { return e.Type != "pool.invited" && e.Realm == "r1" && e.At.Before(before) })
	d = controltest.Data(s.MustDo(200, "DELETE", "/api/v1/events", map[string]any{"realm_id": "r1", "before_date": before.Format(time.RFC3339Nano)}, admin))
	if int(d["deleted"].(float64)) != both {
		t.Fatalf("delete by realm and date: %v, want %d", d["deleted"], both)
	}
	left -= both
	victim := ""
	for _, e := range all {
		if !e.At.Before(now.Add(-24*time.Hour)) && e.Type == "container.running" {
			victim = e.ID
		}
	}
	s.MustDo(200, "DELETE", "/api/v1/events/"+victim, nil, admin)
	s.MustDo(404, "DELETE", "/api/v1/events/"+victim, nil, admin)
	s.MustDo(404, "GET", "/api/v1/events/"+victim, nil, admin)
	left--
	_, seededLeft := listAll(t, s, admin, url.Values{"resource_type": {"container"}}, 500)
	_, others := listAll(t, s, admin, url.Values{"resource_type": {"firewall"}}, 500)
	if seededLeft+others != left {
		t.Fatalf("%d seeded events left, want %d", seededLeft+others, left)
	}
	// all=true removes everything, the admin's own user.created included.
	total := int(controltest.Data(s.MustDo(200, "GET", "/api/v1/events?limit=1", nil, admin))["pagination"].(map[string]any)["total"].(float64))
	d = controltest.Data(s.MustDo(200, "DELETE", "/api/v1/events", map[string]any{"all": true}, admin))
	if int(d["deleted"].(float64)) != total {
		t.Fatalf("delete all: %v, want %d", d["deleted"], total)
	}
	if st := controltest.Data(s.MustDo(200, "GET", "/api/v1/events/stats", nil, admin)); st["total"].(float64) != 0 {
		t.Fatalf("after delete all: %v", st)
	}
}
