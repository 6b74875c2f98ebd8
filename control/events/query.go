package events

import (
	"sort"
	"strings"
	"time"

	"deckhand/platform/store"
)

// Filter selects events: empty fields match anything; Start and End are
// inclusive bounds on created_at (zero = open).
type Filter struct {
	EventType    string
	ResourceType string
	ResourceID   string
	ProjectID    string
	ContainerID  string
	RealmID      string
	Start, End   time.Time
}

// equalities are the filter's equality fields, most selective first: the
// first one given drives the scan, the others are checked on each event.
func (f Filter) equalities() [][2]string {
	var out [][2]string
	for _, e := range [][2]string{{fResID, f.ResourceID}, {fContainer, f.ContainerID}, {fProject, f.ProjectID},
		{fRealm, f.RealmID}, {fResType, f.ResourceType}, {fType, f.EventType}} {
		if e[1] != "" {
			out = append(out, e)
		}
	}
	return out
}

// Matches reports whether ev passes every field of f.
func (f Filter) Matches(ev *Event) bool {
	switch {
	case f.EventType != "" && ev.EventType != f.EventType,
		f.ResourceType != "" && ev.ResourceType != f.ResourceType,
		f.ResourceID != "" && ev.ResourceID != f.ResourceID,
		f.ProjectID != "" && ev.ProjectID != f.ProjectID,
		f.ContainerID != "" && ev.ContainerID != f.ContainerID,
		f.RealmID != "" && ev.RealmID != f.RealmID,
		!f.Start.IsZero() && ev.CreatedAt.Before(f.Start),
		!f.End.IsZero() && ev.CreatedAt.After(f.End):
		return false
	}
	return true
}

// Viewer is whose view a read takes: admins see every event; a user sees
// the events they own or caused and those of projects Project admits.
type Viewer struct {
	All    bool
	UserID string
	// Project reports whether the viewer may see a project's events (the
	// projects domain's "project.member" check); nil admits none.
	Project func(projectID string) bool

	cache map[string]bool
}

func (v *Viewer) project(id string) bool {
	if id == "" || v.Project == nil {
		return false
	}
	if ok, seen := v.cache[id]; seen {
		return ok
	}
	if v.cache == nil {
		v.cache = map[string]bool{}
	}
	ok := v.Project(id)
	v.cache[id] = ok
	return ok
}

// Sees reports whether the viewer may see ev.
func (v *Viewer) Sees(ev *Event) bool {
	return v.All || (v.UserID != "" && (ev.UserID == v.UserID || ev.ActorID == v.UserID)) || v.project(ev.ProjectID)
}

// Sort orders a list: by created_at (default) or by event_type then
// created_at; Desc reverses both.
type Sort struct {
	ByType bool
	Desc   bool
}

// stream is one ordered key range that yields event keys.
type stream struct {
	prefix string // index prefix; "" with main
	main   bool   // the log bucket itself
	// timed: the part after prefix is the event key, so dates bound the
	// range; else (the whole type index) dates are checked per key.
	timed bool
	// implied: every event of the stream passes the filter's equalities
	// and the viewer, so only dates remain (and keys alone suffice).
	implied bool
}

func indexPrefix(field, value string) string { return field + sep + value + sep }

// plan picks the streams that cover the events f and v select.
func plan(tx *store.Tx, f Filter, v *Viewer, byType bool) ([]stream, error) {
	eq := f.equalities()
	if len(eq) > 0 {
		s := stream{prefix: indexPrefix(eq[0][0], eq[0][1]), timed: true}
		s.implied = len(eq) == 1 && (v.All || (eq[0][0] == fProject && v.project(eq[0][1])))
		return []stream{s}, nil
	}
	if v.All {
		if byType {
			return []stream{{prefix: fType + sep, implied: true}}, nil
		}
		return []stream{{main: true, timed: true, implied: true}}, nil
	}
	out := []stream{{prefix: indexPrefix(fUser, v.UserID), timed: true, implied: true}}
	if v.Project == nil {
		return out, nil
	}
	err := tx.ForEach(ProjectsBucket, func(p string, _ []byte) error {
		if v.project(p) {
			out = append(out, stream{prefix: indexPrefix(fProject, p), timed: true, implied: true})
		}
		return nil
	})
	return out, err
}

// eventKey is the event key an entry of s carries.
func (s stream) eventKey(k string) string {
	if s.main {
		return k
	}
	if s.timed {
		return k[len(s.prefix):]
	}
	return k[strings.LastIndex(k, sep)+1:]
}

func (s stream) bucket() string {
	if s.main {
		return Bucket
	}
	return IndexBucket
}

// scan visits the stream's entries within f's dates in order (newest
// first with desc), handing fn the event key and the entry key; after
// resumes past an entry key (ascending scans only).
func (s stream) scan(tx *store.Tx, f Filter, desc bool, after string, fn func(evKey, entry string) error) error {
	var lo, hi string // event-key bounds: lo <= key < hi
	if !f.Start.IsZero() {
		lo = TimeKey(f.Start)
	}
	if !f.End.IsZero() {
		hi = TimeKey(f.End.Add(time.Nanosecond))
	}
	o := store.ScanOptions{Prefix: s.prefix, Reverse: desc}
	if s.timed {
		if !desc && lo != "" {
			o.Start = s.prefix + lo
		}
		if desc && hi != "" {
			o.Start = s.prefix + hi
		}
	}
	if after != "" {
		o.Start, o.Exclusive = after, true
	}
	return tx.Scan(s.bucket(), o, func(k string, _ []byte) error {
		ek := s.eventKey(k)
		if len(ek) < 19 {
			return nil // not an event key (never written by Append)
		}
		if lo != "" && ek < lo {
			if s.timed && desc {
				return store.ErrStop
			}
			return nil
		}
		if hi != "" && ek >= hi {
			if s.timed && !desc {
				return store.ErrStop
			}
			return nil
		}
		return fn(ek, k)
	})
}

// count is the number of entries of an implied stream within f's dates.
func (s stream) count(tx *store.Tx, f Filter) (int, error) {
	if f.Start.IsZero() && f.End.IsZero() {
		if s.main {
			return tx.Count(Bucket), nil
		}
		return tx.CountPrefix(IndexBucket, s.prefix), nil
	}
	n := 0
	err := s.scan(tx, f, false, "", func(string, string) error { n++; return nil })
	return n, err
}

// Page is one page of a list and the number of events the whole list has.
type Page struct {
	Events []Event
	Total  int
}

// Find lists the events f and v select in order o, skipping offset and
// returning at most limit. One index range drives every list; events are
// loaded only for the page, or to check the filters the range does not
// imply.
func Find(tx *store.Tx, f Filter, v *Viewer, o Sort, offset, limit int) (Page, error) {
	streams, err := plan(tx, f, v, o.ByType)
	if err != nil {
		return Page{}, err
	}
	s := streams[0]
	ordered := len(streams) == 1 && (!o.ByType || f.EventType != "" || !s.timed)
	if !ordered {
		return collect(tx, streams, f, v, o, offset, limit)
	}
	page := Page{Events: []Event{}}
	if s.implied {
		if page.Total, err = s.count(tx, f); err != nil {
			return Page{}, err
		}
		if offset >= page.Total {
			return page, nil
		}
		var keys []string
		i := 0
		err = s.scan(tx, f, o.Desc, "", func(ek, _ string) error {
			if i >= offset+limit {
				return store.ErrStop
			}
			if i++; i > offset {
				keys = append(keys, ek)
			}
			return nil
		})
		if err != nil {
			return Page{}, err
		}
		evs, err := loadMany(tx, keys)
		if err != nil {
			return Page{}, err
		}
		page.Events = present(evs)
		return page, nil
	}
	// Every candidate of the range is checked, a batch at a time: one
	// multi-get per batch rather than one read per candidate.
	ownOnly := !v.All && v.UserID != "" && len(f.equalities()) == 1
	own := indexPrefix(fUser, v.UserID)
	var keys []string           // the page's event keys, in order
	have := map[string]*Event{} // those of them already read
	i := 0
	err = inBatches(func(yield func(string) error) error {
		return s.scan(tx, f, o.Desc, "", func(ek, _ string) error { return yield(ek) })
	}, func(batch []string) error {
		var evs []*Event
		visible := make([]bool, len(batch))
		if ownOnly {
			// The filter is the range itself; what remains is whether the
			// viewer may see the event: their own index entry says so
			// without reading it, a project's membership needs its record.
			ownKeys := make([]string, len(batch))
			for j, ek := range batch {
				ownKeys[j] = own + ek
			}
			marks, err := tx.GetRawMany(IndexBucket, ownKeys)
			if err != nil {
				return err
			}
			var others []string
			for j, m := range marks {
				visible[j] = m != nil
				if m == nil && v.Project != nil {
					others = append(others, batch[j])
				}
			}
			loaded, err := loadMany(tx, others)
			if err != nil {
				return err
			}
			evs = make([]*Event, len(batch))
			for j, n := 0, 0; j < len(batch) && n < len(others); j++ {
				if batch[j] == others[n] {
					evs[j], visible[j] = loaded[n], loaded[n] != nil && v.Sees(loaded[n])
					n++
				}
			}
		} else {
			var err error
			if evs, err = loadMany(tx, batch); err != nil {
				return err
			}
			for j, ev := range evs {
				visible[j] = ev != nil && f.Matches(ev) && v.Sees(ev)
			}
		}
		for j, ek := range batch {
			if !visible[j] {
				continue
			}
			if i++; i > offset && i <= offset+limit {
				keys = append(keys, ek)
				if evs[j] != nil {
					have[ek] = evs[j]
				}
			}
		}
		return nil
	})
	if err != nil {
		return Page{}, err
	}
	page.Total = i
	var missing []string
	for _, k := range keys {
		if have[k] == nil {
			missing = append(missing, k)
		}
	}
	loaded, err := loadMany(tx, missing)
	if err != nil {
		return Page{}, err
	}
	for n, k := range missing {
		have[k] = loaded[n]
	}
	for _, k := range keys {
		if ev := have[k]; ev != nil {
			page.Events = append(page.Events, *ev)
		}
	}
	return page, nil
}

// batchSize is how many candidate events list paths check per multi-get.
const batchSize = 500

// inBatches hands what scan yields to check in batches of batchSize, in
// order; check returning store.ErrStop ends the scan after that batch.
func inBatches[T any](scan func(yield func(T) error) error, check func(batch []T) error) error {
	batch := make([]T, 0, batchSize)
	err := scan(func(k T) error {
		if batch = append(batch, k); len(batch) < batchSize {
			return nil
		}
		err := check(batch)
		batch = batch[:0]
		return err
	})
	if err != nil || len(batch) == 0 {
		return err
	}
	if err := check(batch); err != store.ErrStop {
		return err
	}
	return nil
}

// loadMany reads the events stored under keys, in order: nil where one
// is missing.
func loadMany(tx *store.Tx, keys []string) ([]*Event, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	return store.GetMany[Event](tx, Bucket, keys)
}

// present is the events of evs that exist, in order.
func present(evs []*Event) []Event {
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		if ev != nil {
			out = append(out, *ev)
		}
	}
	return out
}

type hit struct{ key, typ string }

// matching is every event of streams that passes f and v, each once.
func matching(tx *store.Tx, streams []stream, f Filter, v *Viewer, visit func(*Event)) error {
	seen := map[string]bool{}
	for _, s := range streams {
		err := inBatches(func(yield func(string) error) error {
			return s.scan(tx, f, false, "", func(ek, _ string) error {
				if seen[ek] {
					return nil
				}
				seen[ek] = true
				return yield(ek)
			})
		}, func(batch []string) error {
			evs, err := loadMany(tx, batch)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if ev != nil && (s.implied || (f.Matches(ev) && v.Sees(ev))) {
					visit(ev)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// collect serves lists that no single range orders: several streams (a
// user's own events and their projects'), or event_type order over a
// range ordered by time.
func collect(tx *store.Tx, streams []stream, f Filter, v *Viewer, o Sort, offset, limit int) (Page, error) {
	var hits []hit
	err := matching(tx, streams, f, v, func(ev *Event) {
		hits = append(hits, hit{key: KeyOf(ev.ID), typ: ev.EventType})
	})
	if err != nil {
		return Page{}, err
	}
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if o.Desc {
			a, b = b, a
		}
		if o.ByType && a.typ != b.typ {
			return a.typ < b.typ
		}
		return a.key < b.key
	})
	var keys []string
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		keys = append(keys, hits[i].key)
	}
	evs, err := loadMany(tx, keys)
	if err != nil {
		return Page{}, err
	}
	return Page{Events: present(evs), Total: len(hits)}, nil
}

// Stats counts the events f and v select by event type and by resource
// type (Total is their sum either way).
type Stats struct {
	Total          int            `json:"total"`
	ByEventType    map[string]int `json:"by_event_type"`
	ByResourceType map[string]int `json:"by_resource_type"`
}

// Count aggregates the events f and v select. An admin's count over
// dates alone reads only index keys (one range per kind); other counts
// read the events of their streams.
func Count(tx *store.Tx, f Filter, v *Viewer) (Stats, error) {
	st := Stats{ByEventType: map[string]int{}, ByResourceType: map[string]int{}}
	if v.All && len(f.equalities()) == 0 {
		var err error
		if st.ByEventType, err = countByValue(tx, fType, f); err != nil {
			return Stats{}, err
		}
		if st.ByResourceType, err = countByValue(tx, fResType, f); err != nil {
			return Stats{}, err
		}
		for _, n := range st.ByEventType {
			st.Total += n
		}
		return st, nil
	}
	streams, err := plan(tx, f, v, false)
	if err != nil {
		return Stats{}, err
	}
	err = matching(tx, streams, f, v, func(ev *Event) {
		st.Total++
		st.ByEventType[ev.EventType]++
		st.ByResourceType[ev.ResourceType]++
	})
	return st, err
}

// countByValue counts index entries per value of field within f's dates,
// skipping from one value to the next.
func countByValue(tx *store.Tx, field string, f Filter) (map[string]int, error) {
	out := map[string]int{}
	prefix := field + sep
	start := ""
	for {
		value, found := "", false
		err := tx.Scan(IndexBucket, store.ScanOptions{Prefix: prefix, Start: start, Limit: 1}, func(k string, _ []byte) error {
			rest := k[len(prefix):]
			if i := strings.Index(rest, sep); i > 0 {
				value, found = rest[:i], true
			}
			return nil
		})
		if err != nil || !found {
			return out, err
		}
		n, err := stream{prefix: indexPrefix(field, value), timed: true, implied: true}.count(tx, f)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out[value] = n
		}
		start = prefix + value + "\x20" // past every key of value (sep is \x1f)
	}
}

// DeleteBatch deletes at most max events f selects, visiting at most
// 8*max entries from after (an entry key DeleteBatch returned; "" starts
// at the beginning). It returns how many it deleted and where to resume
// ("" when the range is exhausted). Deletion is an admin's act: no viewer.
func DeleteBatch(tx *store.Tx, f Filter, after string, max int) (int, string, error) {
	all := &Viewer{All: true}
	streams, err := plan(tx, f, all, false)
	if err != nil {
		return 0, "", err
	}
	s := streams[0]
	var keys []string
	visited, last := 0, ""
	type entry struct{ ek, key string }
	err = inBatches(func(yield func(entry) error) error {
		return s.scan(tx, f, false, after, func(ek, key string) error { return yield(entry{ek, key}) })
	}, func(batch []entry) error {
		var evs []*Event
		if !s.implied {
			ks := make([]string, len(batch))
			for j, e := range batch {
				ks[j] = e.ek
			}
			var err error
			if evs, err = loadMany(tx, ks); err != nil {
				return err
			}
		}
		for j, e := range batch {
			if len(keys) >= max || visited >= 8*max {
				return store.ErrStop
			}
			visited++
			last = e.key
			if s.implied || (evs[j] != nil && f.Matches(evs[j])) {
				keys = append(keys, e.ek)
			}
		}
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	n := 0
	for _, k := range keys {
		ok, err := remove(tx, k)
		if err != nil {
			return 0, "", err
		}
		if ok {
			n++
		}
	}
	if len(keys) < max && visited < 8*max {
		last = "" // exhausted
	}
	return n, last, nil
}
