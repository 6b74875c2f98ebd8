package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"deckhand/platform/store"
)

// TableCase is a domain's declared table held to the contract: records
// as the domain writes them, keyed as it keys them, and the queries its
// lists ask.
type TableCase struct {
	Table *store.Table
	// Records are key → a value of the table's record type.
	Records map[string]any
	// Queries use eq, ne, gt, gte, lt, lte, in and alternatives (AnyOf);
	// the reference evaluation below knows no like.
	Queries []store.Query
}

// RunTables holds domain tables to the contract on one engine, each on a
// fresh store:
//   - the records are written to the bucket before the table is declared
//     (the layout of a version that scanned the bucket by hand), and
//     Declare moves them into the table;
//   - every query answers what a reference evaluation of the records
//     (their derived values, Table.RowValues) answers: the keys in order
//     and the total, whole and page by page through cursors;
//   - after a third of the records is deleted and another third is
//     rewritten with the deleted ones' values, the indexes answer alike.
func RunTables(t *testing.T, open Opener, cases []TableCase) {
	for _, c := range cases {
		t.Run(c.Table.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := open(t)
			recs := map[string][]byte{}
			for k, v := range c.Records {
				raw, err := json.Marshal(v)
				must(t, err)
				recs[k] = raw
			}
			must(t, db.Update(func(tx *store.Tx) error {
				for k, raw := range recs {
					if err := tx.PutRaw(c.Table.Name, k, raw); err != nil {
						return err
					}
				}
				return nil
			}))
			must(t, db.Declare(ctx, c.Table))
			checkQueries(t, db, c, recs, "declared over existing records")

			keys := slices.Sorted(maps.Keys(recs))
			must(t, db.Update(func(tx *store.Tx) error {
				for i, k := range keys {
					switch i % 3 {
					case 0:
						delete(recs, k)
						if err := tx.Delete(c.Table.Name, k); err != nil {
							return err
						}
					case 1: // the values of the record just deleted (a unique index admits them)
						donor := c.Records[keys[i-1]]
						raw, _ := json.Marshal(donor)
						recs[k] = raw
						if err := tx.Put(c.Table.Name, k, donor); err != nil {
							return err
						}
					}
				}
				return nil
			}))
			checkQueries(t, db, c, recs, "after deletes and rewrites")
		})
	}
}

// checkQueries compares every query's answer with the reference's.
func checkQueries(t *testing.T, db *store.DB, c TableCase, recs map[string][]byte, when string) {
	t.Helper()
	rows := map[string][]any{}
	for k, raw := range recs {
		row, err := c.Table.RowValues(raw)
		must(t, err)
		rows[k] = row
	}
	for qi, q := range c.Queries {
		want, total := reference(t, c.Table, rows, q)
		var got []string
		var gotTotal int
		must(t, db.View(func(tx *store.Tx) error {
			pg, err := tx.Page(c.Table, q)
			if err != nil {
				return err
			}
			for _, it := range pg.Items {
				got = append(got, it.Key)
				var a, b any
				if json.Unmarshal(it.Value, &a) != nil || json.Unmarshal(recs[it.Key], &b) != nil || !reflect.DeepEqual(a, b) {
					t.Errorf("%s: query %d: record %s is %s, want %s", when, qi, it.Key, it.Value, recs[it.Key])
				}
			}
			gotTotal = pg.Total
			return nil
		}))
		if !slices.Equal(got, want) {
			t.Errorf("%s: query %d %+v: keys\n got %v\nwant %v", when, qi, q, got, want)
		}
		if !q.SkipTotal && gotTotal != total {
			t.Errorf("%s: query %d %+v: total %d, want %d", when, qi, q, gotTotal, total)
		}
		if q.Offset > 0 {
			continue
		}
		// The same list two records at a time, each page resuming after
		// the previous one's cursor.
		pq := q
		pq.Limit, pq.SkipTotal = 2, true
		var paged []string
		for {
			var pg store.RawPage
			must(t, db.View(func(tx *store.Tx) error {
				var err error
				pg, err = tx.Page(c.Table, pq)
				return err
			}))
			for _, it := range pg.Items {
				paged = append(paged, it.Key)
			}
			if pg.Next == "" || (q.Limit > 0 && len(paged) >= q.Limit) {
				break
			}
			pq.Cursor = pg.Next
		}
		if q.Limit > 0 && len(paged) > q.Limit {
			paged = paged[:q.Limit]
		}
		if !slices.Equal(paged, want) {
			t.Errorf("%s: query %d %+v by pages of 2: keys\n got %v\nwant %v", when, qi, q, paged, want)
		}
	}
}

// reference answers q by evaluating every record: the page's keys and
// the number of matches.
func reference(t *testing.T, tb *store.Table, rows map[string][]any, q store.Query) ([]string, int) {
	t.Helper()
	pos := func(f string) int {
		for i, fi := range tb.Fields {
			if fi.Name == f {
				return i
			}
		}
		if f != "key" {
			t.Fatalf("table %s has no field %s", tb.Name, f)
		}
		return -1
	}
	value := func(k string, f string) any {
		if p := pos(f); p >= 0 {
			return rows[k][p]
		}
		return k
	}
	var match []string
	for k := range rows {
		ok := true
		for _, f := range q.Filters {
			ok = ok && domainHolds(t, f, func(field string) any { return value(k, field) })
		}
		if ok {
			match = append(match, k)
		}
	}
	slices.SortFunc(match, func(a, b string) int {
		for _, f := range q.Sort {
			if c := domainCompare(value(a, f), value(b, f)); c != 0 {
				return c
			}
		}
		return strings.Compare(a, b)
	})
	if q.Desc {
		slices.Reverse(match)
	}
	total := len(match)
	match = match[min(q.Offset, len(match)):]
	if q.Limit > 0 && len(match) > q.Limit {
		match = match[:q.Limit]
	}
	return match, total
}

// domainHolds evaluates one filter as SQL does: a NULL passes only eq nil,
// ne with a value and in with nil among its values.
func domainHolds(t *testing.T, f store.Filter, value func(string) any) bool {
	if f.Any != nil {
		for _, g := range f.Any {
			if domainHolds(t, g, value) {
				return true
			}
		}
		return false
	}
	v := value(f.Field)
	if f.Op == store.In {
		rv := reflect.ValueOf(f.Value)
		for i := range rv.Len() {
			w := domainNorm(rv.Index(i).Interface())
			if domainCompare(v, w) == 0 && (v == nil) == (w == nil) {
				return true
			}
		}
		return false
	}
	want := domainNorm(f.Value)
	switch f.Op {
	case store.Eq:
		return domainCompare(v, want) == 0 && (v == nil) == (want == nil)
	case store.Ne:
		return domainCompare(v, want) != 0 || (v == nil) != (want == nil)
	}
	if v == nil || want == nil {
		return false
	}
	c := domainCompare(v, want)
	switch f.Op {
	case store.Gt:
		return c > 0
	case store.Gte:
		return c >= 0
	case store.Lt:
		return c < 0
	case store.Lte:
		return c <= 0
	}
	t.Fatalf("the reference evaluation knows no %s", f.Op)
	return false
}

// domainNorm is a filter value as RowValues gives a field's: int64, a time
// in UTC to the microsecond (the zero time is NULL), a string.
func domainNorm(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case time.Time:
		if x.IsZero() {
			return nil
		}
		return time.UnixMicro(x.UnixMicro()).UTC()
	case string:
		return x
	}
	rv := reflect.ValueOf(v)
	if rv.CanInt() {
		return rv.Int()
	}
	if rv.CanUint() {
		return int64(rv.Uint())
	}
	panic(fmt.Sprintf("filter value %T", v))
}

// domainCompare orders two values of one type, NULL after every value.
func domainCompare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case int64:
		return cmp.Compare(x, b.(int64))
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	panic(fmt.Sprintf("field value %T", a))
}

// RunTablesOnEngines runs RunTables on every engine (Engines), in
// parallel subtests named after them.
func RunTablesOnEngines(t *testing.T, cases []TableCase) {
	for _, e := range Engines() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			RunTables(t, e.Open, cases)
		})
	}
}
