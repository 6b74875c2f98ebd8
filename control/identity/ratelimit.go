package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"deckhand/platform"
	"deckhand/platform/store"
)

// Rule allows N events per window Per.
type Rule struct {
	N   int
	Per time.Duration
}

// Limits are the abuse limits, per client IP and per account. A zero Rule
// disables that limit.
type Limits struct {
	LoginPerIP          Rule // every login attempt
	LoginPerAccount     Rule // failed logins of one username/email
	SignupPerIP         Rule
	TwoFactorPerIP      Rule // 2FA code checks (login step, setup, disable)
	TwoFactorPerAccount Rule
	RefreshPerIP        Rule
	RefreshPerAccount   Rule
	RecoveryPerIP       Rule // forgot-password mails
	RecoveryPerAccount  Rule // mails to one address (forgot-password; signup separately)
	VerifyPerIP         Rule // verify-email, reset-password, intent exchange, OAuth starts
}

// DefaultLimits follow GoTrue's defaults: sign-ins and sign-ups 30 per 5
// minutes per IP, token refresh 150 per 5 minutes, MFA verify 15 per
// minute, few recovery mails per address and hour.
func DefaultLimits() Limits {
	return Limits{
		LoginPerIP:          Rule{30, 5 * time.Minute},
		LoginPerAccount:     Rule{10, 15 * time.Minute},
		SignupPerIP:         Rule{30, 5 * time.Minute},
		TwoFactorPerIP:      Rule{15, time.Minute},
		TwoFactorPerAccount: Rule{15, time.Minute},
		RefreshPerIP:        Rule{150, 5 * time.Minute},
		RefreshPerAccount:   Rule{150, 5 * time.Minute},
		RecoveryPerIP:       Rule{30, time.Hour},
		RecoveryPerAccount:  Rule{3, time.Hour},
		VerifyPerIP:         Rule{360, time.Hour},
	}
}

// limiter keeps fixed-window counters in the store (bucket
// identity_rate_limits, one record per key), so replicas on one database
// count together: 30 logins per IP are 30 across every replica. A counter
// changes inside one transaction with its check, so racing requests never
// overshoot; a store that is down refuses with 503 rather than let
// requests through uncounted.
type limiter struct {
	clock platform.Clock
	db    *store.DB
}

const bucketLimits = "identity_rate_limits"

type window struct {
	Start time.Time     `json:"start"`
	Per   time.Duration `json:"per"`
	N     int           `json:"n"`
}

func newLimiter(clock platform.Clock, db *store.DB) *limiter {
	return &limiter{clock: clock, db: db}
}

// current reads key's window, or a new one when there is none or it ended.
func current(tx *store.Tx, key string, r Rule, now time.Time) (window, error) {
	var w window
	ok, err := tx.Get(bucketLimits, key, &w)
	if err != nil {
		return w, err
	}
	if !ok || now.Sub(w.Start) >= r.Per || now.Before(w.Start) {
		w = window{Start: now, Per: r.Per}
	}
	return w, nil
}

// limitKey bounds a key (it carries client input) to the store's limit.
func limitKey(key string) string {
	if len(key) > 512 {
		sum := sha256.Sum256([]byte(key))
		return key[:64] + "#" + hex.EncodeToString(sum[:])
	}
	return key
}

// hit counts one event and reports 429 once the window is full.
func (l *limiter) hit(key string, r Rule) error {
	if r.N <= 0 {
		return nil
	}
	key = limitKey(key)
	now := l.clock.Now()
	var full *window
	err := l.db.Update(func(tx *store.Tx) error {
		full = nil
		w, err := current(tx, key, r, now)
		if err != nil {
			return err
		}
		if w.N >= r.N {
			full = &w
			return nil
		}
		w.N++
		return tx.Put(bucketLimits, key, &w)
	})
	if err != nil {
		return storeErr("count the request", err)
	}
	if full != nil {
		return tooMany(full, now)
	}
	return nil
}

// check reports 429 when the window is full, without counting.
func (l *limiter) check(key string, r Rule) error {
	if r.N <= 0 {
		return nil
	}
	key = limitKey(key)
	now := l.clock.Now()
	var w window
	err := l.db.View(func(tx *store.Tx) error {
		var err error
		w, err = current(tx, key, r, now)
		return err
	})
	if err != nil {
		return storeErr("check the request count", err)
	}
	if w.N >= r.N {
		return tooMany(&w, now)
	}
	return nil
}

// add counts one event without checking (failed attempts).
func (l *limiter) add(key string, r Rule) error {
	if r.N <= 0 {
		return nil
	}
	key = limitKey(key)
	now := l.clock.Now()
	err := l.db.Update(func(tx *store.Tx) error {
		w, err := current(tx, key, r, now)
		if err != nil {
			return err
		}
		w.N++
		return tx.Put(bucketLimits, key, &w)
	})
	return storeErr("count the failed attempt", err)
}

func tooMany(w *window, now time.Time) error {
	secs := int(math.Ceil(w.Start.Add(w.Per).Sub(now).Seconds()))
	if secs < 1 {
		secs = 1
	}
	return &platform.Error{Code: platform.CodeTooManyRequests,
		Message: "too many requests; retry after " + strconv.Itoa(secs) + " seconds",
		Headers: map[string]string{"Retry-After": strconv.Itoa(secs)}}
}

// gc drops windows that have ended.
func (l *limiter) gc() {
	now := l.clock.Now()
	_ = l.db.Update(func(tx *store.Tx) error {
		var ended []string
		err := tx.ForEach(bucketLimits, func(k string, raw []byte) error {
			var w window
			if json.Unmarshal(raw, &w) != nil || now.Sub(w.Start) >= w.Per {
				ended = append(ended, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range ended {
			if err := tx.Delete(bucketLimits, k); err != nil {
				return err
			}
		}
		return nil
	})
}
