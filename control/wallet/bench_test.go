package wallet_test

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/control/wallet"
	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// BenchmarkTransfer64 is 64 concurrent clients transferring 1.00 with a
// fresh idempotency key each, over 8 accounts, through the domain method
// (no HTTP), with group commit (batch) and without (one store
// transaction per transfer), on each engine; "2replicas" runs two wallet
// services on two handles of one PostgreSQL database, half the clients
// each. It reports transfers/s and the p99 latency.
//
//	go test -run '^$' -bench Transfer64 -benchtime 4000x ./control/wallet
func BenchmarkTransfer64(b *testing.B) {
	for _, e := range storetest.Engines() {
		for _, mode := range []struct {
			name     string
			batch    int
			replicas int
		}{{"batch128", 0, 1}, {"batch8", 8, 1}, {"serial", 1, 1}, {"concurrent", -1, 1},
			{"batch128-2replicas", 0, 2}, {"batch8-2replicas", 8, 2}, {"serial-2replicas", 1, 2}, {"concurrent-2replicas", -1, 2}} {
			if mode.replicas > 1 && e.Name != "postgres" {
				continue
			}
			b.Run(e.Name+"/"+mode.name, func(b *testing.B) {
				db, another := e.Open(b)
				dbs := []*store.DB{db}
				if mode.replicas > 1 {
					dbs = append(dbs, another())
				}
				var ws []*wallet.Service
				var fx *fixture
				for i, d := range dbs {
					f := newFixtureTB(b, d, wallet.Config{TransferFeeBPS: 500, MaxBatch: mode.batch})
					if i == 0 {
						fx = f
					}
					ws = append(ws, f.w)
				}
				const users = 8
				ctxs := make([]contextT, users)
				for u := range ctxs {
					ctxs[u] = fx.userTB(b, fmt.Sprint("user", u), "1000000.00")
				}
				var next atomic.Int64
				lat := make([]time.Duration, b.N)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for c := 0; c < 64; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						w := ws[c%len(ws)]
						for {
							i := int(next.Add(1) - 1)
							if i >= b.N {
								return
							}
							t0 := time.Now()
							if _, err := w.Transfer(ctxs[i%users], wallet.TransferInput{Amount: "1.00", IdempotencyKey: ptr(fmt.Sprint("k", i))}); err != nil {
								b.Error(err)
								return
							}
							lat[i] = time.Since(t0)
						}
					}()
				}
				wg.Wait()
				el := time.Since(start)
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(b.N)/el.Seconds(), "transfers/s")
				b.ReportMetric(float64(lat[b.N*99/100].Microseconds())/1000, "p99-ms")
				if r, err := wallet.Verify(b.Context(), db); err != nil || !r.OK() {
					b.Fatalf("verify: %v %v", err, r.Problems)
				}
			})
		}
	}
}
