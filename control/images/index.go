package images

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"deckhand/platform/store"
)

// The public list is served from a read model: every image's filter and
// sort fields, kept in the store as one compact index entry per image
// (bucketIndex, written in the same transaction as the record), and held
// in memory as a snapshot sorted once per sort key.
//
// Every write that changes an image or adds one bumps the catalog version
// (bucketMeta/version) in its own transaction. A list reads the version in
// its read transaction: when the snapshot in memory was built at that
// version it is exact — on every replica, without messages between them —
// and the list filters and pages it in memory; otherwise the list rebuilds
// it from bucketIndex in that same transaction. Decoded records of the
// page are cached in the snapshot, so a steady catalog answers a page of
// 100 without decoding anything.
//
// Index entry (raw bytes, fields split by \x1f, which no field contains):
//
//	os, architecture (lower case), price (minor units), rating (hundredths),
//	added (unix ns), lower-case alias, search text
const (
	bucketIndex = "image_index" // id → entry
	bucketMeta  = "image_meta"  // "version" → catalog version
	// bucketChanges maps each recent version to the image it changed, so a
	// snapshot a few versions behind is brought up to date in place.
	bucketChanges = "image_changes"
	keepChanges   = 1024
	sep           = "\x1f"
)

// sortKeys are the list's sort_by values.
var sortKeys = []string{"alias", "added_date", "price", "rating"}

// searchText is what search matches: alias, image name, description and
// tags, lower-cased, separated by a byte no query contains.
func searchText(r *imageRec) string {
	parts := append([]string{r.Alias, r.ImageName, r.Description}, r.Tags...)
	return strings.ToLower(strings.Join(parts, "\x1e"))
}

func indexValue(r *imageRec) []byte {
	return []byte(strings.Join([]string{strings.ToLower(r.OS), strings.ToLower(r.Architecture),
		strconv.FormatInt(int64(r.Price), 10), strconv.FormatInt(r.average(), 10),
		strconv.FormatInt(r.AddedNanos, 10), strings.ToLower(r.Alias), searchText(r)}, sep))
}

// reindex writes r's index entry, bumps the catalog version and records
// which image the new version changed (bucketChanges keeps the last
// keepChanges of them). Every write of an image record goes through it.
func reindex(tx *store.Tx, r *imageRec) error {
	if err := tx.PutRaw(bucketIndex, r.ID, indexValue(r)); err != nil {
		return err
	}
	var v uint64
	if _, err := tx.Get(bucketMeta, "version", &v); err != nil {
		return err
	}
	v++
	if err := tx.Put(bucketMeta, "version", v); err != nil {
		return err
	}
	if err := tx.PutRaw(bucketChanges, store.SeqKey(v), []byte(r.ID)); err != nil {
		return err
	}
	if v > keepChanges {
		return tx.Delete(bucketChanges, store.SeqKey(v-keepChanges))
	}
	return nil
}

// entry is one image in a snapshot. Entries are shared between
// snapshots until their image changes; rec caches the decoded record.
type entry struct {
	id, os, arch, alias, text string
	price, rate, added        int64
	rec                       atomic.Pointer[imageRec]
}

func parseEntry(id string, v []byte) (*entry, bool) {
	rest := string(v) // one allocation; the fields are substrings of it
	var f [7]string
	for i := range 6 {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, sep); !ok {
			return nil, false
		}
	}
	f[6] = rest
	e := &entry{id: id, os: f[0], arch: f[1], alias: f[5], text: f[6]}
	var err1, err2, err3 error
	e.price, err1 = strconv.ParseInt(f[2], 10, 64)
	e.rate, err2 = strconv.ParseInt(f[3], 10, 64)
	e.added, err3 = strconv.ParseInt(f[4], 10, 64)
	return e, err1 == nil && err2 == nil && err3 == nil
}

// compare orders two entries by sort key by, ties by id (ascending).
func compare(by string, a, b *entry) int {
	var c int
	switch by {
	case "alias":
		c = strings.Compare(a.alias, b.alias)
	case "added_date":
		c = cmp.Compare(a.added, b.added)
	case "price":
		c = cmp.Compare(a.price, b.price)
	default:
		c = cmp.Compare(a.rate, b.rate)
	}
	if c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// snapshot is the catalog at one version.
type snapshot struct {
	version uint64
	order   map[string][]*entry // ascending, per sort key
}

// readModel holds the newest snapshot built.
type readModel struct {
	mu   sync.Mutex
	snap *snapshot
}

// at returns the snapshot of the catalog as tx sees it: the one in
// memory when it is of tx's version, else that one brought forward by the
// versions' changes, else one built from the whole index.
func (c *readModel) at(tx *store.Tx) (*snapshot, error) {
	var v uint64
	if _, err := tx.Get(bucketMeta, "version", &v); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.snap
	if cur != nil && cur.version == v {
		return cur, nil
	}
	var next *snapshot
	var err error
	if cur != nil && cur.version < v && v-cur.version < keepChanges/2 {
		next, err = cur.forward(tx, v)
	}
	if next == nil && err == nil {
		next, err = build(tx, v)
	}
	if err != nil {
		return nil, err
	}
	if cur == nil || cur.version < v {
		c.snap = next // an older transaction's view never replaces a newer one
	}
	return next, nil
}

// build reads every index entry and sorts them once per sort key.
func build(tx *store.Tx, v uint64) (*snapshot, error) {
	var all []*entry
	err := tx.Scan(bucketIndex, store.ScanOptions{}, func(id string, raw []byte) error {
		e, ok := parseEntry(id, raw)
		if !ok {
			return errIndex(id)
		}
		all = append(all, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s := &snapshot{version: v, order: map[string][]*entry{}}
	for _, by := range sortKeys {
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, func(a, b *entry) int { return compare(by, a, b) })
		s.order[by] = sorted
	}
	return s, nil
}

// forward is s brought to version v by re-reading the images the versions
// after s changed; nil (and no error) when the change log does not cover
// them all (pruned), so the caller builds afresh.
func (s *snapshot) forward(tx *store.Tx, v uint64) (*snapshot, error) {
	var ids []string
	err := tx.Scan(bucketChanges, store.ScanOptions{Start: store.SeqKey(s.version), Exclusive: true, Limit: int(v - s.version)},
		func(_ string, raw []byte) error {
			ids = append(ids, string(raw))
			return nil
		})
	if err != nil || uint64(len(ids)) != v-s.version {
		return nil, err
	}
	next := &snapshot{version: v, order: map[string][]*entry{}}
	for by, list := range s.order {
		next.order[by] = slices.Clone(list)
	}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		raw := tx.GetRaw(bucketIndex, id)
		e, ok := parseEntry(id, raw)
		if raw == nil || !ok {
			return nil, errIndex(id)
		}
		var old *entry
		for _, x := range next.order["alias"] {
			if x.id == id {
				old = x
				break
			}
		}
		for by, list := range next.order {
			if old != nil {
				i, found := slices.BinarySearchFunc(list, old, func(a, b *entry) int { return compare(by, a, b) })
				if !found {
					return nil, errIndex(id)
				}
				list = slices.Delete(list, i, i+1)
			}
			i, _ := slices.BinarySearchFunc(list, e, func(a, b *entry) int { return compare(by, a, b) })
			next.order[by] = slices.Insert(list, i, e)
		}
	}
	return next, nil
}

// record is the decoded image of e, read once per entry.
func (e *entry) record(tx *store.Tx) (*imageRec, error) {
	if r := e.rec.Load(); r != nil {
		return r, nil
	}
	r := new(imageRec)
	ok, err := tx.Get(bucketImages, e.id, r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errIndex(e.id)
	}
	e.rec.Store(r)
	return r, nil
}

type errIndex string

func (e errIndex) Error() string { return "image index entry without a valid image: " + string(e) }

// filter is a public list's filters in the index's terms.
type filter struct {
	os, arch         string
	minPrice         int64
	maxPrice         int64 // -1: none
	minRate, maxRate int64 // hundredths
	search           string
}

func (f *filter) match(e *entry) bool {
	return (f.os == "" || e.os == f.os) && (f.arch == "" || e.arch == f.arch) &&
		e.price >= f.minPrice && (f.maxPrice < 0 || e.price <= f.maxPrice) &&
		e.rate >= f.minRate && e.rate <= f.maxRate &&
		(f.search == "" || strings.Contains(e.text, f.search))
}

// page returns the number of entries passing f and those on the page, in
// order by (descending when desc).
func (s *snapshot) page(by string, desc bool, f *filter, offset, limit int) (int, []*entry) {
	all := s.order[by]
	total := 0
	var ids []*entry
	for i := range all {
		e := all[i]
		if desc {
			e = all[len(all)-1-i]
		}
		if !f.match(e) {
			continue
		}
		if total++; total > offset && len(ids) < limit {
			ids = append(ids, e)
		}
	}
	return total, ids
}
