package identity

import (
	"math"
	"strconv"
	"sync"
	"time"

	"deckhand/platform"
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

// limiter keeps fixed-window counters in memory (one control-plane process
// owns the store, so one process sees every request).
type limiter struct {
	clock platform.Clock
	mu    sync.Mutex
	wins  map[string]*window
}

type window struct {
	start time.Time
	per   time.Duration
	n     int
}

func newLimiter(clock platform.Clock) *limiter {
	return &limiter{clock: clock, wins: map[string]*window{}}
}

func (l *limiter) get(key string, r Rule, now time.Time) *window {
	w := l.wins[key]
	if w == nil || now.Sub(w.start) >= r.Per {
		w = &window{start: now, per: r.Per}
		l.wins[key] = w
	}
	return w
}

// hit counts one event and reports 429 once the window is full.
func (l *limiter) hit(key string, r Rule) error {
	if r.N <= 0 {
		return nil
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.get(key, r, now)
	if w.n >= r.N {
		return tooMany(w, now)
	}
	w.n++
	return nil
}

// check reports 429 when the window is full, without counting.
func (l *limiter) check(key string, r Rule) error {
	if r.N <= 0 {
		return nil
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.get(key, r, now); w.n >= r.N {
		return tooMany(w, now)
	}
	return nil
}

// add counts one event without checking (failed attempts).
func (l *limiter) add(key string, r Rule) {
	if r.N <= 0 {
		return
	}
	now := l.clock.Now()
	l.mu.Lock()
	l.get(key, r, now).n++
	l.mu.Unlock()
}

func tooMany(w *window, now time.Time) error {
	secs := int(math.Ceil(w.start.Add(w.per).Sub(now).Seconds()))
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
	l.mu.Lock()
	for k, w := range l.wins {
		if now.Sub(w.start) >= w.per {
			delete(l.wins, k)
		}
	}
	l.mu.Unlock()
}
