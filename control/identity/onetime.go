package identity

import (
	"encoding/json"
	"time"

	"deckhand/platform/store"
)

// One-time secret kinds. Each is stored under kind + ":" + lookupKey(secret)
// and consumed by deleting it in the same transaction that acts on it, so
// it works at most once.
const (
	onceVerify = "verify" // email verification, 24 h
	onceReset  = "reset"  // password reset, 1 h
	onceIntent = "intent" // PKCE intent token / OAuth completion code, 5 min
	onceTemp   = "temp"   // 2FA step of a login, 5 min
	onceState  = "state"  // OAuth state, 10 min
)

var onceTTL = map[string]time.Duration{
	onceVerify: 24 * time.Hour,
	onceReset:  time.Hour,
	onceIntent: 5 * time.Minute,
	onceTemp:   5 * time.Minute,
	onceState:  10 * time.Minute,
}

type onceRec struct {
	Kind      string    `json:"kind"`
	UserID    string    `json:"user_id,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
	// Challenge is the client's PKCE code_challenge (intent, temp, state).
	Challenge string `json:"challenge,omitempty"`
	// Mode is the login's response_mode carried through a 2FA step.
	Mode   string `json:"mode,omitempty"`
	Method string `json:"method,omitempty"` // session method: password, oauth:<provider>
	// OAuth state fields.
	Provider     string `json:"provider,omitempty"`
	Verifier     string `json:"verifier,omitempty"` // our PKCE verifier toward the provider (sealed)
	RedirectURI  string `json:"redirect_uri,omitempty"`
	Intent       string `json:"intent,omitempty"`
	StateID      string `json:"state_id,omitempty"`
	BrowserBind  string `json:"browser_bind,omitempty"` // lookup key of the binding cookie
	Attempts     int    `json:"attempts,omitempty"`
	PasswordHash string `json:"password_hash,omitempty"` // verify: the signup's password (argon2id)
}

// issueOnce stores rec under a fresh secret and returns the secret.
func (s *Service) issueOnce(tx *store.Tx, rec onceRec) (string, error) {
	secret := randomToken(32)
	if rec.ExpiresAt.IsZero() {
		rec.ExpiresAt = s.now().Add(onceTTL[rec.Kind])
	}
	return secret, tx.Put(bucketOnce, rec.Kind+":"+s.lookupKey(secret), rec)
}

// peekOnce reads a live record without consuming it.
func (s *Service) peekOnce(tx *store.Tx, kind, secret string) (*onceRec, error) {
	if secret == "" {
		return nil, nil
	}
	var rec onceRec
	ok, err := tx.Get(bucketOnce, kind+":"+s.lookupKey(secret), &rec)
	if err != nil || !ok {
		return nil, err
	}
	if !s.now().Before(rec.ExpiresAt) {
		if tx.Writable() {
			return nil, tx.Delete(bucketOnce, kind+":"+s.lookupKey(secret))
		}
		return nil, nil
	}
	return &rec, nil
}

// takeOnce consumes a live record (nil when absent or expired).
func (s *Service) takeOnce(tx *store.Tx, kind, secret string) (*onceRec, error) {
	rec, err := s.peekOnce(tx, kind, secret)
	if err != nil || rec == nil {
		return nil, err
	}
	return rec, tx.Delete(bucketOnce, kind+":"+s.lookupKey(secret))
}

// takeOnceUser consumes a live record and loads the account it names; a
// missing record or account is errBadToken.
func (s *Service) takeOnceUser(tx *store.Tx, kind, secret string) (*onceRec, *userRec, error) {
	rec, err := s.takeOnce(tx, kind, secret)
	if err != nil {
		return nil, nil, err
	}
	if rec == nil {
		return nil, nil, errBadToken
	}
	u, err := userOr(tx, rec.UserID, errBadToken)
	return rec, u, err
}

func (s *Service) putOnce(tx *store.Tx, kind, secret string, rec *onceRec) error {
	return tx.Put(bucketOnce, kind+":"+s.lookupKey(secret), rec)
}

func (s *Service) dropOnce(tx *store.Tx, kind, secret string) error {
	return tx.Delete(bucketOnce, kind+":"+s.lookupKey(secret))
}

// sweepExpired removes expired one-time records, launch tickets and dead
// sessions; it runs
// from the janitor so the buckets do not grow without bound.
func (s *Service) sweepExpired() {
	now := s.now()
	_ = s.update(func(tx *store.Tx) error {
		sweepBucket(tx, bucketOnce, func(rec *onceRec) bool { return !now.Before(rec.ExpiresAt) })
		sweepBucket(tx, bucketLaunch, func(t *launchRec) bool { return !now.Before(t.ExpiresAt.Add(time.Hour)) })
		// Sessions whose refresh token has expired, or revoked a day ago
		// (long enough for reuse attempts to still be told apart).
		sweepBucket(tx, bucketSessions, func(sess *sessionRec) bool {
			return now.After(sess.GenIssued.Add(refreshTTL+time.Hour)) ||
				(sess.Revoked && now.After(sess.RevokedAt.Add(24*time.Hour)))
		})
		return nil
	})
}

// sweepBucket deletes the records of bucket that do not decode as T or
// that dead reports as dead.
func sweepBucket[T any](tx *store.Tx, bucket string, dead func(*T) bool) {
	var keys []string
	_ = tx.ForEach(bucket, func(k string, raw []byte) error {
		var v T
		if json.Unmarshal(raw, &v) != nil || dead(&v) {
			keys = append(keys, k)
		}
		return nil
	})
	for _, k := range keys {
		_ = tx.Delete(bucket, k)
	}
}
