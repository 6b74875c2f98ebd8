package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Rate limits are declared once, in the route table (Route.Limits), next to
// the policy: the host enforces the ones it can key (by client IP, by
// account, by credential) before the handler runs, and the domain applies
// the ones keyed by a value it learns while working (the email a login
// tries, the account behind a 2FA temp_token) through the same Limiter.
// The OpenAPI document lists every one of them (x-rate-limits).

// LimitBy is what a rate limit counts per.
type LimitBy uint8

const (
	// ByIP counts per client address (ClientIP).
	ByIP LimitBy = iota + 1
	// ByAccount counts per signed-in user.
	ByAccount
	// ByCredential counts per session or auth token.
	ByCredential
	// ByValue counts per a value the domain supplies once it knows it
	// (RateLimit.Value says which); the host does not apply it.
	ByValue
)

func (b LimitBy) String() string {
	switch b {
	case ByIP:
		return "ip"
	case ByAccount:
		return "account"
	case ByCredential:
		return "credential"
	case ByValue:
		return "value"
	}
	return "unknown"
}

// RateLimit allows N events per window Per for each key. Routes naming
// the same Name share its counters (every OAuth start and ticket route
// draws on one "verify" budget per IP). N <= 0 disables the limit.
type RateLimit struct {
	Name string
	By   LimitBy
	N    int
	Per  time.Duration
	// Value says, for ByValue, what the key is ("the email tried").
	Value string
	// Failures marks a limit that counts failed attempts only: the domain
	// calls Check before the attempt and Add after it fails.
	Failures bool
}

// On is the limit applied to key.
func (l RateLimit) On(key string) LimitHit { return LimitHit{Limit: l, Key: key} }

// LimitHit is one rate limit applied to one key.
type LimitHit struct {
	Limit RateLimit
	Key   string
}

// Limiter counts rate-limited events. Every method takes several hits so a
// request's limits cost one store transaction.
type Limiter interface {
	// Allow counts one event under each hit in order and answers 429
	// TOO_MANY_REQUESTS with Retry-After at the first whose window is full;
	// that one and those after it are not counted.
	Allow(ctx context.Context, hits ...LimitHit) error
	// Check answers as Allow would, counting nothing.
	Check(ctx context.Context, hits ...LimitHit) error
	// Add counts one event under each hit without checking.
	Add(ctx context.Context, hits ...LimitHit) error
}

// StoreLimiter keeps fixed-window counters in the store, so replicas on
// one PostgreSQL database share them. A window starts at its key's first
// event and lasts Per; each window also writes an expiry index entry, and
// Sweep deletes ended windows by walking that index from its start, so
// sweeping costs the number of ended windows, not the number of keys.
// A window is named by the limit's Name and the key alone, so a domain
// applying a host limit's rule by value shares its counters. Keys are stored as hashes: the emails and temp_tokens that limits count
// by never sit in the store in the clear.
type StoreLimiter struct {
	db    *store.DB
	clock clockpkg.Clock
}

// LimitBucket holds rate-limit windows ("w/...") and their expiry index
// ("x/...").
const LimitBucket = "rate_limits"

// NewStoreLimiter returns a limiter over db.
func NewStoreLimiter(db *store.DB, clock clockpkg.Clock) *StoreLimiter {
	if clock == nil {
		clock = clockpkg.SystemClock{}
	}
	return &StoreLimiter{db: db, clock: clock}
}

type limitWindow struct {
	Start int64 `json:"s"` // unix nanoseconds
	End   int64 `json:"e"`
	N     int   `json:"n"`
}

func windowKey(h LimitHit) string {
	sum := sha256.Sum256([]byte(h.Limit.Name + "\x00" + h.Key))
	return "w/" + h.Limit.Name + "/" + hex.EncodeToString(sum[:16])
}

func expiryKey(end int64, wkey string) string {
	return fmt.Sprintf("x/%020d/%s", end, strings.TrimPrefix(wkey, "w/"))
}

const (
	modeAllow = iota
	modeCheck
	modeAdd
)

// Allow implements Limiter.
func (l *StoreLimiter) Allow(ctx context.Context, hits ...LimitHit) error {
	return l.run(ctx, modeAllow, hits)
}

// Check implements Limiter.
func (l *StoreLimiter) Check(ctx context.Context, hits ...LimitHit) error {
	return l.run(ctx, modeCheck, hits)
}

// Add implements Limiter.
func (l *StoreLimiter) Add(ctx context.Context, hits ...LimitHit) error {
	return l.run(ctx, modeAdd, hits)
}

func (l *StoreLimiter) run(ctx context.Context, mode int, hits []LimitHit) error {
	live := slices.DeleteFunc(slices.Clone(hits), func(h LimitHit) bool { return h.Limit.N <= 0 || h.Limit.Per <= 0 })
	if len(live) == 0 {
		return nil
	}
	now := l.clock.Now().UnixNano()
	var refused *fault.Error
	what, txn := "count the request for its rate limit", l.db.UpdateContext
	if mode == modeCheck {
		what, txn = "check the rate limit", l.db.ViewContext
	}
	err := txn(ctx, func(tx *store.Tx) error {
		refused = nil // the function may run again after a conflict
		for _, h := range live {
			key := windowKey(h)
			var w limitWindow
			ok, err := tx.Get(LimitBucket, key, &w)
			if err != nil {
				return err
			}
			fresh := !ok || now >= w.End
			if fresh {
				w = limitWindow{Start: now, End: now + int64(h.Limit.Per)}
			}
			if mode != modeAdd && w.N >= h.Limit.N {
				refused = tooMany(w, now)
				return nil
			}
			if mode == modeCheck {
				continue
			}
			w.N++
			if fresh {
				if err := tx.PutRaw(LimitBucket, expiryKey(w.End, key), []byte{1}); err != nil {
					return err
				}
			}
			if err := tx.Put(LimitBucket, key, w); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fault.Internal(what, err)
	}
	if refused != nil {
		return refused
	}
	return nil
}

func tooMany(w limitWindow, now int64) *fault.Error {
	secs := max(1, int(math.Ceil(float64(w.End-now)/float64(time.Second))))
	return &fault.Error{Code: fault.CodeTooManyRequests,
		Message: "too many requests; retry after " + strconv.Itoa(secs) + " seconds",
		Headers: map[string]string{"Retry-After": strconv.Itoa(secs)}}
}

// Sweep deletes windows that have ended, at most a batch per transaction,
// and reports how many it removed.
func (l *StoreLimiter) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		now := l.clock.Now().UnixNano()
		n := 0
		err := l.db.UpdateContext(ctx, func(tx *store.Tx) error {
			n = 0
			var done []string
			err := tx.Scan(LimitBucket, store.ScanOptions{Prefix: "x/", Limit: 500}, func(k string, _ []byte) error {
				end, err := strconv.ParseInt(k[2:22], 10, 64)
				if err != nil || end > now {
					return store.ErrStop
				}
				done = append(done, k)
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range done {
				wkey := "w/" + k[23:]
				var w limitWindow
				ok, err := tx.Get(LimitBucket, wkey, &w)
				if err != nil {
					return err
				}
				if ok && w.End <= now {
					if err := tx.Delete(LimitBucket, wkey); err != nil {
						return err
					}
				}
				if err := tx.Delete(LimitBucket, k); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		total += n
		if err != nil || n < 500 {
			return total, err
		}
	}
}

// RunSweeper sweeps ended windows every interval until ctx ends.
func (l *StoreLimiter) RunSweeper(ctx context.Context, every time.Duration, log func(err error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := l.Sweep(ctx); err != nil && ctx.Err() == nil && log != nil {
				log(err)
			}
		}
	}
}
