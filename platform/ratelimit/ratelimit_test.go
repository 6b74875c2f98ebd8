package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/ratelimit"
	"deckhand/platform/store/storetest"
)

// Two replicas on one storage share the counters, and a full window admits
// exactly N under concurrent hits (PostgreSQL's serializable transactions
// re-run on conflict; bbolt serializes writers).
func TestLimiterIsExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			t.Parallel()
			db, another := eng.Open(t)
			clock := clockpkg.NewFakeClock(time.Now())
			replicas := []*ratelimit.StoreLimiter{ratelimit.NewStoreLimiter(db, clock), ratelimit.NewStoreLimiter(another(), clock)}
			rule := ratelimit.RateLimit{Name: "exact", By: ratelimit.ByIP, N: 7, Per: time.Minute}
			var ok, refused atomic.Int32
			var wg sync.WaitGroup
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func(l *ratelimit.StoreLimiter) {
					defer wg.Done()
					err := l.Allow(context.Background(), rule.On("203.0.113.5"))
					switch {
					case err == nil:
						ok.Add(1)
					case fault.AsError(err).Code == fault.CodeTooManyRequests:
						refused.Add(1)
					default:
						t.Errorf("allow: %v", err)
					}
				}(replicas[i%2])
			}
			wg.Wait()
			if ok.Load() != 7 || refused.Load() != 13 {
				t.Fatalf("admitted %d, refused %d; want 7 and 13", ok.Load(), refused.Load())
			}
			clock.Advance(time.Minute)
			if err := replicas[1].Allow(context.Background(), rule.On("203.0.113.5")); err != nil {
				t.Fatalf("next window: %v", err)
			}
			if n, err := replicas[0].Sweep(context.Background()); err != nil || n != 1 {
				t.Fatalf("sweep: %d %v", n, err)
			}
		})
	}
}
