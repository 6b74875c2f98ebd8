package journal

import (
	"crypto/rand"
	"errors"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const (
	bucketEntries = "entries"
	bucketMeta    = "meta"
	metaState     = "state"
)

// state is the journal's bookkeeping, written in the same transaction as
// the entries it counts.
type state struct {
	ID     []byte `json:"id"`
	Head   uint64 `json:"head"`   // last sequence number written (0: none yet)
	Oldest uint64 `json:"oldest"` // first sequence number still stored (Head+1 when empty)
	Bytes  int64  `json:"bytes"`  // bytes of keys and records stored
	// Mark is the newest entry time written so far (Unix ns); MaxLate the
	// most an entry's time ever lagged behind the mark at its write. Time
	// bounds of queries use both to stop scans early yet stay exact.
	Mark     int64            `json:"mark"`
	MaxLate  int64            `json:"max_late"`
	Sources  map[string]int64 `json:"sources"`
	Levels   map[string]int64 `json:"levels"`
	Dropped  int64            `json:"dropped"`
	Removed  int64            `json:"removed"` // entries retention removed, ever
	Received int64            `json:"received"`
}

func (s *state) entries() int64 { return int64(s.Head+1) - int64(s.Oldest) }

func loadState(tx *store.Tx) (*state, error) {
	st := &state{}
	found, err := tx.Get(bucketMeta, metaState, st)
	if err != nil {
		return nil, err
	}
	if !found {
		st.ID = make([]byte, 8)
		if _, err := rand.Read(st.ID); err != nil {
			return nil, err
		}
		st.Oldest = 1
	}
	if st.Sources == nil {
		st.Sources = map[string]int64{}
	}
	if st.Levels == nil {
		st.Levels = map[string]int64{}
	}
	return st, nil
}

// pending is an entry waiting for the writer.
type pending struct {
	b  body
	lv byte
}

// write appends a batch and applies retention, in one transaction.
func (s *Service) write(batch []pending, dropped int64) (int, error) {
	now := s.clock.Now()
	var st *state
	err := s.db.Update(func(tx *store.Tx) error {
		var err error
		if st, err = loadState(tx); err != nil {
			return err
		}
		for _, p := range batch {
			t := p.b.Time.UnixNano()
			if t > st.Mark {
				st.Mark = t
			} else if late := st.Mark - t; late > st.MaxLate {
				st.MaxLate = late
			}
			rec, err := encode(p.b, p.lv, st.Mark)
			if err != nil {
				return err
			}
			st.Head++
			k := seqKey(st.Head)
			if err := tx.PutRaw(bucketEntries, k, rec); err != nil {
				return err
			}
			st.Bytes += int64(len(k) + len(rec))
			st.Sources[p.b.Source]++
			st.Levels[p.b.Level]++
		}
		st.Received += int64(len(batch))
		st.Dropped += dropped
		if err := s.retain(tx, st, now); err != nil {
			return err
		}
		return tx.Put(bucketMeta, metaState, st)
	})
	if err != nil {
		return 0, err
	}
	s.published(st)
	return len(batch), nil
}

// retain removes the oldest entries while the journal is over its size or
// they are older than the age limit (by their watermark, which is at
// least their own time).
func (s *Service) retain(tx *store.Tx, st *state, now time.Time) error {
	cutoff := int64(-1 << 63)
	if s.set.MaxAge > 0 {
		cutoff = now.Add(-s.set.MaxAge).UnixNano()
	}
	for st.Oldest <= st.Head {
		overSize := s.set.MaxBytes > 0 && st.Bytes > s.set.MaxBytes
		k := seqKey(st.Oldest)
		raw := tx.GetRaw(bucketEntries, k)
		h, ok := parseHeader(raw)
		if raw != nil && !ok {
			return errors.New("journal: malformed record " + k)
		}
		if raw != nil && !overSize && h.mark >= cutoff {
			return nil
		}
		if raw != nil {
			st.Bytes -= int64(len(k) + len(raw))
			if n := st.Sources[h.source] - 1; n > 0 {
				st.Sources[h.source] = n
			} else {
				delete(st.Sources, h.source)
			}
			lv := levels[min(int(h.level), len(levels)-1)]
			if n := st.Levels[lv] - 1; n > 0 {
				st.Levels[lv] = n
			} else {
				delete(st.Levels, lv)
			}
			if err := tx.Delete(bucketEntries, k); err != nil {
				return err
			}
			st.Removed++
		}
		st.Oldest++
	}
	return nil
}

// snapshot is the state readers resolve cursors and bounds against.
type snapshot struct {
	id            []byte
	head, oldest  uint64
	mark, maxLate int64
}

func (s *Service) published(st *state) {
	s.mu.Lock()
	s.snap = snapshot{id: st.ID, head: st.Head, oldest: st.Oldest, mark: st.Mark, maxLate: st.MaxLate}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// current is the latest snapshot and the channel closed at the next write.
func (s *Service) current() (snapshot, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap, s.changed
}

// Stats is the answer of GET /api/v1/journal/stats.
type Stats struct {
	Entries  int64            `json:"entries" required:"true"`
	Bytes    int64            `json:"bytes" required:"true" doc:"bytes of stored records and keys (retention keeps this under max_bytes)"`
	Oldest   *time.Time       `json:"oldest,omitempty" doc:"time of the oldest stored entry"`
	Newest   *time.Time       `json:"newest,omitempty" doc:"time of the newest stored entry"`
	BySource map[string]int64 `json:"by_source" required:"true"`
	ByLevel  map[string]int64 `json:"by_level" required:"true"`
	// Totals since the journal was created.
	Received      int64 `json:"received" required:"true" doc:"entries written since the journal was created"`
	Removed       int64 `json:"removed" required:"true" doc:"entries retention removed since the journal was created"`
	Dropped       int64 `json:"dropped" required:"true" doc:"entries lost before they reached the store because a buffer was full"`
	Pending       int   `json:"pending" required:"true" doc:"entries buffered, not yet written"`
	FileBytes     int64 `json:"file_bytes" required:"true" doc:"size of the journal's store file"`
	MaxBytes      int64 `json:"max_bytes" required:"true"`
	MaxAgeSeconds int64 `json:"max_age_seconds" required:"true"`
}

func (s *Service) stats() (Stats, error) {
	var out Stats
	err := s.db.View(func(tx *store.Tx) error {
		st, err := loadState(tx)
		if err != nil {
			return err
		}
		out = Stats{Entries: st.entries(), Bytes: st.Bytes, BySource: st.Sources, ByLevel: st.Levels,
			Received: st.Received, Removed: st.Removed, Dropped: st.Dropped}
		if st.Oldest <= st.Head {
			if h, ok := parseHeader(tx.GetRaw(bucketEntries, seqKey(st.Oldest))); ok {
				t := time.Unix(0, h.time).UTC()
				out.Oldest = &t
			}
			if h, ok := parseHeader(tx.GetRaw(bucketEntries, seqKey(st.Head))); ok {
				t := time.Unix(0, h.time).UTC()
				out.Newest = &t
			}
		}
		return nil
	})
	if err != nil {
		return Stats{}, fault.Internal("read the journal's stats", err)
	}
	return out, nil
}
