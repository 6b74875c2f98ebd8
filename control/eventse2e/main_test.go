package eventse2e_test

import (
	"fmt"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"deckhand/control/controltest"
)

func TestMain(m *testing.M) { controltest.Main(m) }

// seeded is one event the test reported and what it knows of it.
type seeded struct {
	ID, Type, Container, Project, Realm, Resource string
	At                                            time.Time
}

// seed reports n events through the admin route, 8 at a time, with kinds,
// containers, projects and realms cycling and created_at spread step
// apart going back from base.
func seed(t *testing.T, s *controltest.Server, admin string, n int, base time.Time, step time.Duration) []seeded {
	t.Helper()
	kinds := []string{"container.running", "container.stopped", "firewall.rule.added", "pool.invited", "container.snapshot.created"}
	out := make([]seeded, n)
	var wg sync.WaitGroup
	work := make(chan int)
	var mu sync.Mutex
	var failed string
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				e := seeded{Type: kinds[i%len(kinds)], Container: fmt.Sprintf("c%d", i%10), Project: fmt.Sprintf("p%d", i%4),
					Realm: fmt.Sprintf("r%d", i%2), At: base.Add(-time.Duration(i) * step)}
				body := map[string]any{"event_type": e.Type, "container_id": e.Container, "project_id": e.Project,
					"realm_id": e.Realm, "created_at": e.At.Format(time.RFC3339Nano), "payload": map[string]any{"i": i}}
				if e.Type == "firewall.rule.added" || e.Type == "pool.invited" {
					body["resource_id"] = fmt.Sprintf("res%d", i%3)
				}
				r := s.Call("POST", "/api/v1/admin/events", body, admin)
				if r.Status != 201 {
					mu.Lock()
					failed = string(r.Raw)
					mu.Unlock()
					continue
				}
				d := controltest.Data(r)
				e.ID, e.Resource = d["id"].(string), d["resource_id"].(string)
				out[i] = e
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if failed != "" {
		t.Fatalf("seeding: %s", failed)
	}
	return out
}

// listAll pages through GET /api/v1/events with q and page size limit and
// answers the ids in order and the reported total.
func listAll(t *testing.T, s *controltest.Server, bearer string, q url.Values, limit int) ([]string, int) {
	t.Helper()
	var ids []string
	total := -1
	for off := 0; ; off += limit {
		q.Set("limit", fmt.Sprint(limit))
		q.Set("offset", fmt.Sprint(off))
		d := controltest.Data(s.MustDo(200, "GET", "/api/v1/events?"+q.Encode(), nil, bearer))
		pg := d["pagination"].(map[string]any)
		tot := int(pg["total"].(float64))
		if total >= 0 && tot != total {
			t.Fatalf("total changed between pages: %d then %d", total, tot)
		}
		total = tot
		if want := (tot + limit - 1) / limit; int(pg["totalPages"].(float64)) != want || int(pg["page"].(float64)) != off/limit+1 {
			t.Fatalf("pagination %v for offset %d", pg, off)
		}
		evs := d["events"].([]any)
		for _, e := range evs {
			ids = append(ids, e.(map[string]any)["id"].(string))
		}
		if len(evs) < limit {
			return ids, total
		}
	}
}

// expect is the ids of the seeded events keep selects, newest first.
func expect(all []seeded, keep func(seeded) bool) []string {
	var sel []seeded
	for _, e := range all {
		if keep(e) {
			sel = append(sel, e)
		}
	}
	sort.Slice(sel, func(i, j int) bool { return sel[i].At.After(sel[j].At) })
	ids := make([]string, len(sel))
	for i, e := range sel {
		ids[i] = e.ID
	}
	return ids
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
