package wallet

import (
	"context"
	"encoding/json"
	"time"

	"deckhand/control/money"
	"deckhand/platform/store"
)

// pendingLimit is a limit the AI provider has not confirmed yet.
type pendingLimit struct {
	KeyID string       `json:"key_id"`
	Limit money.Amount `json:"limit"`
}

// syncLimit sends the user's pending limit to the AI provider and clears
// the mark when the provider took it (and the limit has not moved since).
// It reports whether nothing is left pending.
func (s *Service) syncLimit(ctx context.Context, userID string) bool {
	var p pendingLimit
	var ok bool
	if err := s.db.View(func(tx *store.Tx) error {
		var err error
		ok, err = tx.Get(bucketAIPending, userID, &p)
		return err
	}); err != nil {
		return false
	}
	if !ok {
		return true
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.ai.SetLimit(cctx, userID, p.KeyID, p.Limit); err != nil {
		s.log.Warn("AI credit limit not confirmed; will retry", "user_id", userID, "err", err)
		return false
	}
	err := s.db.Update(func(tx *store.Tx) error {
		var cur pendingLimit
		found, err := tx.Get(bucketAIPending, userID, &cur)
		if err != nil || !found || cur != p {
			return err // a newer limit is pending: its own sync clears it
		}
		return tx.Delete(bucketAIPending, userID)
	})
	return err == nil
}

// markReceiptPending records limit_sync_pending in the stored receipt, so
// a replay tells the truth the first answer told.
func (s *Service) markReceiptPending(userID string, key *string) {
	if key == nil {
		return
	}
	_ = s.db.Update(func(tx *store.Tx) error {
		var rec keyRecord
		ok, err := tx.Get(bucketKeys, keyID(userID, *key), &rec)
		if err != nil || !ok {
			return err
		}
		rec.Receipt.LimitSyncPending = true
		return tx.Put(bucketKeys, keyID(userID, *key), rec)
	})
}

// retryPending sends every pending limit again.
func (s *Service) retryPending(ctx context.Context) {
	if s.ai == nil {
		return
	}
	var users []string
	_ = s.db.View(func(tx *store.Tx) error {
		return tx.ForEach(bucketAIPending, func(k string, _ []byte) error {
			users = append(users, k)
			return nil
		})
	})
	for _, u := range users {
		s.syncLimit(ctx, u)
	}
}

// RetryPending runs one retry round now (tests; the background runs it
// every Config.RetryEvery).
func (s *Service) RetryPending(ctx context.Context) { s.retryPending(ctx) }

// PendingLimits counts users whose AI limit awaits the provider.
func (s *Service) PendingLimits() (int, error) {
	n := 0
	err := s.db.View(func(tx *store.Tx) error {
		n = tx.Count(bucketAIPending)
		return nil
	})
	return n, err
}

// expireKeys deletes idempotency keys past their retention.
func (s *Service) expireKeys() {
	cutoff := s.now().Add(-s.keep)
	for {
		var old []string
		_ = s.db.View(func(tx *store.Tx) error {
			return tx.ForEach(bucketKeys, func(k string, raw []byte) error {
				var rec keyRecord
				if err := json.Unmarshal(raw, &rec); err == nil && rec.CreatedAt.Before(cutoff) {
					old = append(old, k)
				}
				if len(old) >= 500 {
					return store.ErrStop
				}
				return nil
			})
		})
		if len(old) == 0 {
			return
		}
		_ = s.db.Update(func(tx *store.Tx) error {
			for _, k := range old {
				var rec keyRecord
				if ok, err := tx.Get(bucketKeys, k, &rec); err == nil && ok && rec.CreatedAt.Before(cutoff) {
					if err := tx.Delete(bucketKeys, k); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if len(old) < 500 {
			return
		}
	}
}
