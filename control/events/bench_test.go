package events_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/control/events"
	"deckhand/platform/clock"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"
)

// BenchmarkAppendConcurrent appends events from 16 writers at once and
// reports events/s: "record" through Log.Record (group commit: writers
// that arrive while one transaction commits share the next), "append"
// one Append per transaction of its own (as an Append inside another
// domain's change pays), and "plain" the same event as one Put of an
// undeclared bucket in a transaction of its own, the floor any audit
// record pays on the engine without indexes.
func BenchmarkAppendConcurrent(b *testing.B) {
	db := openDeclared(b)
	log := events.NewLog(db, clock.SystemClock{})
	for _, c := range []struct {
		name  string
		write func(ev events.Event) error
	}{
		{"record", func(ev events.Event) error { _, err := log.Record(ev); return err }},
		{"append", func(ev events.Event) error {
			return db.Update(func(tx *store.Tx) error { _, err := log.Append(tx, ev); return err })
		}},
		{"plain", func(ev events.Event) error {
			ev.CreatedAt = time.Now()
			return db.Update(func(tx *store.Tx) error {
				return tx.Put("plain_events", strconv.FormatInt(ev.CreatedAt.UnixNano(), 10)+ev.ResourceID+ev.ActorID, ev)
			})
		}},
	} {
		b.Run(engine.Name+"/"+c.name, func(b *testing.B) {
			var n atomic.Int64
			b.SetParallelism(8) // 8 writers per core
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					ev := events.Event{EventType: events.ContainerRunning, ResourceType: events.ResContainer,
						ResourceID: fmt.Sprintf("c%d", i%1000), ContainerID: fmt.Sprintf("c%d", i%1000), ProjectID: fmt.Sprintf("p%d", i%100),
						ActorID: fmt.Sprintf("u%d-%d", i%50, i)}
					if err := c.write(ev); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "events/s")
		})
	}
}

// benchSize is the number of events the list benchmark seeds:
// $DECKHAND_BENCH_EVENTS, default 1,000,000. Events are spread over 1000
// containers, 100 projects and 50 users, one second apart.
func benchSize() int {
	if n, err := strconv.Atoi(os.Getenv("DECKHAND_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

var (
	seedMu sync.Mutex
	seeded = map[string]*store.DB{}
)

var benchT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seedBench fills a store with n events once per engine and process: on
// bbolt through Append, 20,000 per transaction; on PostgreSQL with one
// INSERT ... SELECT per bucket through psql (the same rows Append writes:
// appending a million events one statement at a time takes hours there).
func seedBench(b *testing.B, n int) *store.DB {
	seedMu.Lock()
	defer seedMu.Unlock()
	if db := seeded[engine.Name]; db != nil {
		return db
	}
	start := time.Now()
	var db *store.DB
	if engine.Name == "postgres" {
		url := platformtest.Postgres(b)
		var err error
		if db, err = pgstore.Open(context.Background(), url); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if err := db.Declare(context.Background(), events.Tables...); err != nil { // creates the table
			b.Fatal(err)
		}
		seedSQL(b, url, n)
	} else {
		db = openDeclared(b)
		for i := 0; i < n; {
			err := db.Update(func(tx *store.Tx) error {
				for j := 0; j < 20000 && i+j < n; j++ {
					k := i + j
					if _, err := events.Append(tx, benchT0, benchEvent(k)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			i += 20000
		}
	}
	b.Logf("%s: seeded %d events in %s", engine.Name, n, time.Since(start).Round(time.Second))
	seeded[engine.Name] = db
	return db
}

func benchEvent(k int) events.Event {
	c := fmt.Sprintf("c%d", k%1000)
	return events.Event{EventType: events.Kinds[k%5], ResourceType: events.ResContainer, ResourceID: c, ContainerID: c,
		ProjectID: fmt.Sprintf("p%d", k%100), ActorID: fmt.Sprintf("u%d", k%50), CreatedAt: benchT0.Add(time.Duration(k) * time.Second)}
}

func seedSQL(b *testing.B, pgURL string, n int) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		b.Skip("psql not found: seed PostgreSQL with a smaller DECKHAND_BENCH_EVENTS through Append instead")
	}
	// Rows exactly as Append writes them: the event and its columns; then
	// VACUUM ANALYZE, as autovacuum does in service (a table freshly
	// loaded has no visibility map, so counts would visit the heap).
	kinds := "ARRAY['" + events.Kinds[0] + "','" + events.Kinds[1] + "','" + events.Kinds[2] + "','" + events.Kinds[3] + "','" + events.Kinds[4] + "']"
	sql := fmt.Sprintf(`
CREATE TEMP TABLE g AS SELECT i,
  lpad((%d + i::bigint*1000000000)::text, 19, '0') || '-' || lpad(to_hex(i), 12, '0') AS k,
  (%s)[i %% 5 + 1] AS t, 'c' || (i %% 1000) AS c, 'p' || (i %% 100) AS p, 'u' || (i %% 50) AS u,
  timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => i) AS at
FROM generate_series(0, %d) AS i;
INSERT INTO events (key, value, event_type, resource_type, resource_id, project_id, container_id, user_id, actor_id, created_at)
  SELECT k, jsonb_build_object('id', 'evt_' || k, 'event_type', t, 'resource_type', 'container', 'resource_id', c,
    'project_id', p, 'container_id', c, 'user_id', u, 'actor_id', u,
    'created_at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
  t, 'container', c, p, c, u, u, at FROM g;
INSERT INTO kv (bucket, key, raw) SELECT DISTINCT 'events_projects', p, ''::bytea FROM g;`, benchT0.UnixNano(), kinds, n-1)
	out, err := exec.Command(psql, "-v", "ON_ERROR_STOP=1", "-q", pgURL, "-c", sql, "-c", "VACUUM (FREEZE, ANALYZE) events").CombinedOutput()
	if err != nil {
		b.Fatalf("psql seeding: %v: %s", err, out)
	}
}

// BenchmarkListByContainer lists the newest 100 events of one container
// (1 in 1000 of the log) as an admin, and as the container's user would
// see them, reporting p50 and p99 latency of Find in a read transaction.
func BenchmarkListByContainer(b *testing.B) {
	n := benchSize()
	db := seedBench(b, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name   string
		viewer func(c int) *events.Viewer
	}{
		{"admin", func(int) *events.Viewer { return &events.Viewer{All: true} }},
		{"owner", func(c int) *events.Viewer { return &events.Viewer{UserID: fmt.Sprintf("u%d", c%50)} }},
	} {
		b.Run(fmt.Sprintf("%s/events=%d/%s", engine.Name, n, c.name), func(b *testing.B) {
			// Steady state: on PostgreSQL each pooled connection prepares
			// the list's statement on its first use; warm them all first.
			var wg sync.WaitGroup
			for w := range 32 {
				wg.Go(func() {
					_ = db.View(func(tx *store.Tx) error {
						_, err := events.Find(tx, events.Filter{ContainerID: fmt.Sprintf("c%d", w)}, c.viewer(w), events.Sort{Desc: true}, 0, 100)
						return err
					})
				})
			}
			wg.Wait()
			b.ResetTimer()
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				ci := rng.IntN(1000)
				f := events.Filter{ContainerID: fmt.Sprintf("c%d", ci)}
				t := time.Now()
				var page events.Page
				err := db.View(func(tx *store.Tx) error {
					var err error
					page, err = events.Find(tx, f, c.viewer(ci), events.Sort{Desc: true}, 0, 100)
					return err
				})
				lat = append(lat, time.Since(t))
				if err != nil || len(page.Events) == 0 {
					b.Fatalf("list: %d events, %v", len(page.Events), err)
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
