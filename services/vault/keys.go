package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Record is a key with its value, as GET answers it.
type Record struct {
	Key       string          `json:"key" required:"true"`
	Value     json.RawMessage `json:"value" required:"true" doc:"the stored JSON value"`
	Version   int64           `json:"version" required:"true" doc:"1 on create, +1 on every write"`
	CreatedAt time.Time       `json:"created_at" required:"true"`
	UpdatedAt time.Time       `json:"updated_at" required:"true"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty" doc:"when a TTL was set: the key disappears then"`
}

// Meta is a key without its value, as the listing answers it.
type Meta struct {
	Key       string     `json:"key" required:"true"`
	Version   int64      `json:"version" required:"true"`
	CreatedAt time.Time  `json:"created_at" required:"true"`
	UpdatedAt time.Time  `json:"updated_at" required:"true"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Size      int        `json:"size" required:"true" doc:"bytes of the value's JSON"`
}

// stored is what the store keeps per key: the value only sealed.
type stored struct {
	Meta
	Sealed string `json:"sealed"`
}

// Write is the body of PUT and PATCH.
type Write struct {
	Value      json.RawMessage `json:"value" required:"true" doc:"any JSON value (PATCH: an object merged into the stored object, RFC 7396: null removes a member)"`
	TTLSeconds *int64          `json:"ttl_seconds,omitempty" doc:"seconds until the key expires (1 to 315360000); PUT without it keeps the key forever, PATCH without it keeps the current expiry"`
}

// Validate checks the value's presence and size and the TTL's range.
func (w *Write) Validate() error {
	v := bytes.TrimSpace(w.Value)
	if len(v) == 0 {
		return fault.Invalid("value", "is required (any JSON value; null is a value only when written as null)")
	}
	if len(v) > MaxValueBytes {
		return &fault.Error{Code: fault.CodePayloadTooLarge, Field: "value", Details: "value",
			Message: "value: must be at most " + strconv.Itoa(MaxValueBytes) + " bytes of JSON, got " + strconv.Itoa(len(v))}
	}
	if w.TTLSeconds != nil && (*w.TTLSeconds < 1 || *w.TTLSeconds > MaxTTLSeconds) {
		return fault.Invalid("ttl_seconds", "must be between 1 and %d", MaxTTLSeconds)
	}
	return nil
}

// Precondition is a write's If-Match / If-None-Match.
type Precondition struct {
	// Match: "" none, "*" any existing version, else the version required.
	Match string
	// NoneMatch "*": only when the key does not exist.
	NoneMatch bool
}

// ParsePrecondition reads If-Match ("N", N, W/"N" or *) and If-None-Match (*).
func ParsePrecondition(ifMatch, ifNoneMatch string) (Precondition, error) {
	var p Precondition
	if m := strings.TrimSpace(ifMatch); m != "" {
		if m != "*" {
			m = strings.Trim(strings.TrimPrefix(m, "W/"), `"`)
			if n, err := strconv.ParseInt(m, 10, 64); err != nil || n < 1 {
				return p, &fault.Error{Code: fault.CodeInvalid, Field: "If-Match", Details: "If-Match",
					Message: `If-Match: must be a version as the ETag gives it ("3") or *`}
			}
		}
		p.Match = m
	}
	if n := strings.TrimSpace(ifNoneMatch); n != "" {
		if n != "*" {
			return p, &fault.Error{Code: fault.CodeInvalid, Field: "If-None-Match", Details: "If-None-Match",
				Message: "If-None-Match: only * (create only) is accepted"}
		}
		p.NoneMatch = true
	}
	return p, nil
}

// check applies the precondition to the current record (nil when absent).
func (p Precondition) check(key string, cur *stored) error {
	if p.NoneMatch && cur != nil {
		return fault.Errorf(fault.CodePreconditionFailed, "key %q exists (version %d) and If-None-Match is *", key, cur.Version).WithDetails("If-None-Match")
	}
	switch {
	case p.Match == "":
	case cur == nil:
		return fault.Errorf(fault.CodePreconditionFailed, "key %q does not exist and If-Match was given", key).WithDetails("If-Match")
	case p.Match != "*" && p.Match != strconv.FormatInt(cur.Version, 10):
		return fault.Errorf(fault.CodePreconditionFailed, "key %q is at version %d, not %s: read it again and retry", key, cur.Version, p.Match).WithDetails("If-Match")
	}
	return nil
}

// ValidKey checks a key's length and characters.
func ValidKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fault.Invalid("key", "must be 1 to %d characters", MaxKeyLen)
	}
	if key == "." || key == ".." {
		return fault.Invalid("key", `must not be "." or ".."`)
	}
	return keyAlphabet("key", key)
}

// validBound checks a list bound (prefix, after): empty, or at most a
// key's length in a key's characters. A bound no key could have is an
// error rather than an empty page, so a NUL or a stray byte is named.
func validBound(field, s string) error {
	if len(s) > MaxKeyLen {
		return fault.Invalid(field, "must be at most %d characters (the longest key)", MaxKeyLen)
	}
	return keyAlphabet(field, s)
}

func keyAlphabet(field, s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fault.Invalid(field, "may hold only A-Z a-z 0-9 . _ - (found %q at byte %d)", string([]byte{c}), i)
		}
	}
	return nil
}

func purpose(key string) string { return "vault/value:" + key }

// load reads a live record (nil when absent or expired).
func (s *Service) load(tx *store.Tx, key string, now time.Time) (*stored, error) {
	var cur stored
	found, err := tx.Get(bucketKeys, key, &cur)
	if err != nil {
		return nil, fault.Internal("read the vault", err)
	}
	if !found || (cur.ExpiresAt != nil && !now.Before(*cur.ExpiresAt)) {
		return nil, nil
	}
	return &cur, nil
}

func (s *Service) open(st *stored) (Record, error) {
	plain, err := s.sealer.Open(purpose(st.Key), st.Sealed)
	if err != nil {
		return Record{}, fault.Internal("open the value of "+st.Key, err)
	}
	return Record{Key: st.Key, Value: plain, Version: st.Version, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, ExpiresAt: st.ExpiresAt}, nil
}

// Get answers a live key's record.
func (s *Service) Get(ctx context.Context, key string) (Record, error) {
	if err := ValidKey(key); err != nil {
		return Record{}, err
	}
	var cur *stored
	err := s.db.ViewContext(ctx, func(tx *store.Tx) (err error) {
		cur, err = s.load(tx, key, s.clock.Now())
		return err
	})
	if err != nil {
		return Record{}, err
	}
	if cur == nil {
		return Record{}, fault.NotFound("key", key)
	}
	return s.open(cur)
}

// Put stores value under key; created tells a new key from a replaced one.
func (s *Service) Put(ctx context.Context, key string, w Write, p Precondition) (rec Record, created bool, err error) {
	if err := ValidKey(key); err != nil {
		return Record{}, false, err
	}
	if err := w.Validate(); err != nil {
		return Record{}, false, err
	}
	return s.write(ctx, key, p, func(cur *stored) (json.RawMessage, *time.Time, error) {
		return compact(w.Value), s.expiry(w.TTLSeconds, nil), nil
	})
}

// Patch merges an object into the stored object (RFC 7396).
func (s *Service) Patch(ctx context.Context, key string, w Write, p Precondition) (Record, error) {
	if err := ValidKey(key); err != nil {
		return Record{}, err
	}
	if err := w.Validate(); err != nil {
		return Record{}, err
	}
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(w.Value, &patch); err != nil || patch == nil {
		return Record{}, fault.Invalid("value", "must be a JSON object to merge into the stored object")
	}
	rec, _, err := s.write(ctx, key, p, func(cur *stored) (json.RawMessage, *time.Time, error) {
		if cur == nil {
			return nil, nil, fault.NotFound("key", key)
		}
		old, err := s.open(cur)
		if err != nil {
			return nil, nil, err
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(old.Value, &obj); err != nil || obj == nil {
			return nil, nil, fault.Errorf(fault.CodeConflict, "key %q holds a value that is not a JSON object; PUT replaces it", key).WithDetails("value")
		}
		merged, err := json.Marshal(mergePatch(obj, patch))
		if err != nil {
			return nil, nil, fault.Internal("merge the value", err)
		}
		if len(merged) > MaxValueBytes {
			return nil, nil, &fault.Error{Code: fault.CodePayloadTooLarge, Field: "value", Details: "value",
				Message: "value: the merged value would exceed " + strconv.Itoa(MaxValueBytes) + " bytes"}
		}
		return merged, s.expiry(w.TTLSeconds, cur.ExpiresAt), nil
	})
	return rec, err
}

// mergePatch applies an RFC 7396 merge patch to obj.
func mergePatch(obj, patch map[string]json.RawMessage) map[string]json.RawMessage {
	for k, v := range patch {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(obj, k)
			continue
		}
		var sub map[string]json.RawMessage
		var old map[string]json.RawMessage
		if json.Unmarshal(v, &sub) == nil && sub != nil {
			if json.Unmarshal(obj[k], &old) == nil && old != nil {
				merged, _ := json.Marshal(mergePatch(old, sub))
				obj[k] = merged
				continue
			}
			merged, _ := json.Marshal(mergePatch(map[string]json.RawMessage{}, sub))
			obj[k] = merged
			continue
		}
		obj[k] = v
	}
	return obj
}

func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

func (s *Service) expiry(ttl *int64, keep *time.Time) *time.Time {
	if ttl == nil {
		return keep
	}
	t := s.clock.Now().Add(time.Duration(*ttl) * time.Second).UTC()
	return &t
}

// write runs one compare-and-set: under the store's write lock it reads
// the current record, checks the precondition and stores what next makes.
func (s *Service) write(ctx context.Context, key string, p Precondition,
	next func(cur *stored) (json.RawMessage, *time.Time, error)) (rec Record, created bool, err error) {
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		now := s.clock.Now().UTC()
		cur, err := s.load(tx, key, now)
		if err != nil {
			return err
		}
		if err := p.check(key, cur); err != nil {
			return err
		}
		value, exp, err := next(cur)
		if err != nil {
			return err
		}
		sealed, err := s.sealer.Seal(purpose(key), value)
		if err != nil {
			return fault.Internal("seal the value", err)
		}
		st := stored{Meta: Meta{Key: key, Version: 1, CreatedAt: now, UpdatedAt: now, ExpiresAt: exp, Size: len(value)}, Sealed: sealed}
		created = cur == nil
		if cur != nil {
			st.Version, st.CreatedAt = cur.Version+1, cur.CreatedAt
		}
		if err := tx.Put(bucketKeys, key, st); err != nil {
			return fault.Internal("write the vault", err)
		}
		rec = Record{Key: key, Value: value, Version: st.Version, CreatedAt: st.CreatedAt, UpdatedAt: now, ExpiresAt: exp}
		return nil
	})
	return rec, created, err
}

// Delete removes a key; with a precondition only at that version.
func (s *Service) Delete(ctx context.Context, key string, p Precondition) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	return s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		cur, err := s.load(tx, key, s.clock.Now())
		if err != nil {
			return err
		}
		if cur == nil {
			return fault.NotFound("key", key)
		}
		if err := p.check(key, cur); err != nil {
			return err
		}
		return tx.Delete(bucketKeys, key)
	})
}

// List is the answer of GET /api/v1/vault/keys.
type List struct {
	Keys []Meta `json:"keys" required:"true"`
	// Next is the key to pass as after= for the next page ("" at the end).
	Next string `json:"next,omitempty" doc:"pass as after= for the next page; absent on the last page"`
}

// ListKeys lists live keys in key order, never values.
func (s *Service) ListKeys(ctx context.Context, prefix, after string, limit int) (List, error) {
	if err := validBound("prefix", prefix); err != nil {
		return List{}, err
	}
	if err := validBound("after", after); err != nil {
		return List{}, err
	}
	if limit <= 0 {
		return List{Keys: []Meta{}}, nil
	}
	out := List{Keys: []Meta{}}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		fs := append(store.KeyPrefix(prefix), live(s.clock.Now()))
		if after != "" {
			fs = append(fs, store.Where("key", store.Gt, after))
		}
		pg, err := tx.Page(keyTable, store.Query{Filters: fs, Limit: limit, SkipTotal: true})
		if err != nil {
			return err
		}
		out.Keys = make([]Meta, len(pg.Items))
		for i, it := range pg.Items {
			// Meta alone: the sealed value is skipped, never copied.
			if err := json.Unmarshal(it.Value, &out.Keys[i]); err != nil {
				return err
			}
		}
		if pg.Next != "" {
			out.Next = out.Keys[len(out.Keys)-1].Key
		}
		return nil
	})
	if err != nil {
		return List{}, fault.Internal("list the vault", err)
	}
	return out, nil
}

// Stats is the answer of GET /api/v1/vault/stats.
type Stats struct {
	Keys          int        `json:"keys" required:"true" doc:"live keys"`
	Expiring      int        `json:"expiring" required:"true" doc:"live keys with a TTL"`
	ValueBytes    int64      `json:"value_bytes" required:"true" doc:"bytes of the live values' JSON"`
	MaxValueBytes int        `json:"max_value_bytes" required:"true"`
	MaxKeyLength  int        `json:"max_key_length" required:"true"`
	KeyID         string     `json:"key_id" required:"true" doc:"fingerprint of the vault key (not secret), to tell key files apart"`
	Encryption    string     `json:"encryption" required:"true"`
	LastUpdate    *time.Time `json:"last_update,omitempty" doc:"the newest updated_at"`
}

// Stats counts the live keys.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	st := Stats{MaxValueBytes: MaxValueBytes, MaxKeyLength: MaxKeyLen, KeyID: s.sealer.KeyID(), Encryption: "AES-256-GCM"}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		now := s.clock.Now()
		sizes, err := tx.CountBy(keyTable, []store.Filter{live(now)}, "size")
		if err != nil {
			return err
		}
		for size, n := range sizes {
			b, err := strconv.ParseInt(size, 10, 64)
			if err != nil {
				return err
			}
			st.Keys += n
			st.ValueBytes += b * int64(n)
		}
		expiring, err := tx.Page(keyTable, store.Query{Filters: []store.Filter{store.Where("expires_at", store.Gt, now)}, Limit: 1})
		if err != nil {
			return err
		}
		st.Expiring = expiring.Total
		// The newest update time to the microsecond (the field's
		// precision), then the records of that microsecond for the exact one.
		times, err := tx.CountBy(keyTable, []store.Filter{live(now)}, "updated_at")
		if err != nil || len(times) == 0 {
			return err
		}
		var at time.Time
		for k := range times {
			t, err := time.Parse(time.RFC3339Nano, k)
			if err != nil {
				return err
			}
			if t.After(at) {
				at = t
			}
		}
		recs, _, err := store.All[stored](tx, keyTable, store.Query{Filters: []store.Filter{live(now), store.Where("updated_at", store.Eq, at)}})
		for _, r := range recs {
			if st.LastUpdate == nil || r.UpdatedAt.After(*st.LastUpdate) {
				u := r.UpdatedAt
				st.LastUpdate = &u
			}
		}
		return err
	})
	if err != nil {
		return Stats{}, fault.Internal("count the vault", err)
	}
	return st, nil
}

// Wiped is the answer of DELETE /api/v1/vault.
type Wiped struct {
	Deleted int `json:"deleted" required:"true" doc:"keys removed (expired ones included)"`
}

// Wipe removes every key in one transaction.
func (s *Service) Wipe(ctx context.Context) (Wiped, error) {
	n, err := s.deleteWhere(ctx, func(time.Time) []store.Filter { return nil })
	if err != nil {
		return Wiped{}, fault.Internal("wipe the vault", err)
	}
	return Wiped{Deleted: n}, nil
}

// Purge removes expired keys and answers how many.
func (s *Service) Purge(ctx context.Context) (int, error) {
	n, err := s.deleteWhere(ctx, func(now time.Time) []store.Filter {
		return []store.Filter{store.Where("expires_at", store.Lte, now)}
	})
	if errors.Is(err, context.Canceled) {
		return 0, nil
	}
	return n, err
}

// deleteWhere removes, in one transaction, the keys that pass the filters
// where answers for the transaction's time, and answers how many.
func (s *Service) deleteWhere(ctx context.Context, where func(now time.Time) []store.Filter) (int, error) {
	var n int
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		keys, err := store.Keys(tx, keyTable, store.Query{Filters: where(s.clock.Now())})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := tx.Delete(bucketKeys, k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}

// keyTable holds the records by key (key order is the list's order), with
// what the list, the counts and the expiry sweep select by derived: the
// expiry (NULL: none), the update time and the value's size. No index:
// those queries read the compact rows, and a put writes no more than the
// record and its row.
var keyTable = store.Declare(bucketKeys, []store.Field[stored]{
	store.Time("expires_at", func(r *stored) time.Time {
		if r.ExpiresAt == nil {
			return time.Time{}
		}
		return *r.ExpiresAt
	}),
	store.Time("updated_at", func(r *stored) time.Time { return r.UpdatedAt }),
	store.Int("size", func(r *stored) int64 { return int64(r.Size) }),
})

// live holds for the keys not expired at now.
func live(now time.Time) store.Filter {
	return store.AnyOf(store.Where("expires_at", store.Eq, nil), store.Where("expires_at", store.Gt, now))
}
