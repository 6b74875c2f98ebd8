package images

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"deckhand/platform/store"
)

// The public list is served from one index bucket per sort key. Each
// holds one entry per image: the key is the sort value (fixed-width so
// byte order is value order) then the id; the value is the image's filter
// fields in a flat form that is compared without decoding JSON:
//
//	os \x1f architecture \x1f price (minor units) \x1f rating (hundredths) \x1f search text
//
// A list scans the chosen index in order (backwards for desc), counts the
// entries that pass the filters and reads full records only for the page.
// Every write of an image rewrites its entries in the same transaction.
var indexes = map[string]string{
	"alias":      "images_by_alias",
	"added_date": "images_by_added",
	"price":      "images_by_price",
	"rating":     "images_by_rating",
}

const sep = "\x1f"

func sortValue(r *imageRec, by string) string {
	switch by {
	case "alias":
		return strings.ToLower(r.Alias)
	case "added_date":
		return fmt.Sprintf("%020d", r.AddedNanos)
	case "price":
		return fmt.Sprintf("%019d", int64(r.Price))
	}
	return fmt.Sprintf("%03d", r.average())
}

func indexKey(r *imageRec, by string) string { return sortValue(r, by) + sep + r.ID }

// searchText is what search matches: alias, image name, description and
// tags, lower-cased, separated by a byte no query contains.
func searchText(r *imageRec) string {
	parts := append([]string{r.Alias, r.ImageName, r.Description}, r.Tags...)
	return strings.ToLower(strings.Join(parts, "\x1e"))
}

func indexValue(r *imageRec) []byte {
	return []byte(strings.ToLower(r.OS) + sep + strings.ToLower(r.Architecture) + sep +
		strconv.FormatInt(int64(r.Price), 10) + sep + strconv.FormatInt(r.average(), 10) + sep + searchText(r))
}

// reindex replaces old's index entries (nil for a new image) with cur's.
func reindex(tx *store.Tx, old, cur *imageRec) error {
	val := indexValue(cur)
	for by, bucket := range indexes {
		if old != nil {
			if k := indexKey(old, by); k != indexKey(cur, by) {
				if err := tx.Delete(bucket, k); err != nil {
					return err
				}
			}
		}
		if err := tx.PutRaw(bucket, indexKey(cur, by), val); err != nil {
			return err
		}
	}
	return nil
}

// filter is a public list's filters in the index's terms.
type filter struct {
	os, arch         []byte
	minPrice         int64
	maxPrice         int64 // -1: none
	minRate, maxRate int64 // hundredths
	search           []byte
}

func (f *filter) none() bool {
	return f.os == nil && f.arch == nil && f.minPrice == 0 && f.maxPrice < 0 &&
		f.minRate == 0 && f.maxRate >= 500 && f.search == nil
}

// match reports whether an index value passes the filters, reading the
// fields in place.
func (f *filter) match(v []byte) bool {
	os, v, _ := bytes.Cut(v, []byte(sep))
	if f.os != nil && !bytes.Equal(os, f.os) {
		return false
	}
	arch, v, _ := bytes.Cut(v, []byte(sep))
	if f.arch != nil && !bytes.Equal(arch, f.arch) {
		return false
	}
	price, v, _ := bytes.Cut(v, []byte(sep))
	if p := atoi(price); p < f.minPrice || (f.maxPrice >= 0 && p > f.maxPrice) {
		return false
	}
	rate, text, _ := bytes.Cut(v, []byte(sep))
	if r := atoi(rate); r < f.minRate || r > f.maxRate {
		return false
	}
	return f.search == nil || bytes.Contains(text, f.search)
}

func atoi(b []byte) int64 {
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	return n
}

// scanPage walks the index for sort key by and returns the total number of
// matching images and the ids of those on the page.
func scanPage(tx *store.Tx, by string, desc bool, f *filter, offset, limit int) (int, []string, error) {
	bucket := indexes[by]
	var ids []string
	if f.none() {
		// Without filters the count is the index's size and the scan stops
		// at the end of the page.
		seen := 0
		err := tx.Scan(bucket, store.ScanOptions{Reverse: desc, Limit: offset + limit}, func(k string, _ []byte) error {
			if seen++; seen > offset {
				ids = append(ids, idOfKey(k))
			}
			return nil
		})
		return tx.CountPrefix(bucket, ""), ids, err
	}
	total := 0
	err := tx.Scan(bucket, store.ScanOptions{Reverse: desc}, func(k string, v []byte) error {
		if !f.match(v) {
			return nil
		}
		if total++; total > offset && len(ids) < limit {
			ids = append(ids, idOfKey(k))
		}
		return nil
	})
	return total, ids, err
}

func idOfKey(k string) string { return k[strings.LastIndex(k, sep)+1:] }
