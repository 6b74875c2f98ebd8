package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform/store"
)

// trec is the record type of the contract's table.
type trec struct {
	Name  string    `json:"name"`
	N     int64     `json:"n"`
	At    time.Time `json:"at"`
	Tag   string    `json:"tag,omitempty"`
	Email string    `json:"email,omitempty"`
}

func tableOf(name string) *store.Table {
	return store.Declare(name, []store.Field[trec]{
		store.Text("name", func(r *trec) string { return r.Name }),
		store.Int("n", func(r *trec) int64 { return r.N }),
		store.Time("at", func(r *trec) time.Time { return r.At }),
		store.OptionalText("tag", func(r *trec) string { return r.Tag }),
		store.OptionalText("email", func(r *trec) string { return r.Email }),
	},
		store.Index{Fields: []string{"name"}, Sort: true},
		store.Index{Fields: []string{"n"}, Sort: true},
		store.Index{Fields: []string{"tag", "n"}, Sort: true},
		store.Index{Fields: []string{"at"}, Sort: true},
		store.Index{Fields: []string{"email"}, Unique: true},
	)
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// tableRecords are n records over small sets of values (so filters and
// sorts meet ties and NULLs), keyed k0000...
func tableRecords(n int) map[string]trec {
	rng := rand.New(rand.NewPCG(7, 9))
	names := []string{"alpha", "Alpha", "ALPHA", "beta", "Éclair", "éclair", "a_b", "a%b", `a\b`, "zeta", "", "Zulu"}
	tags := []string{"", "x", "y", "z"}
	out := map[string]trec{}
	for i := range n {
		r := trec{Name: names[rng.IntN(len(names))], N: int64(rng.IntN(26) - 5), Tag: tags[rng.IntN(len(tags))]}
		if rng.IntN(5) > 0 { // a fifth have no time (NULL)
			r.At = t0.Add(time.Duration(rng.IntN(40))*time.Minute + time.Duration(rng.IntN(3))*time.Microsecond + 123*time.Nanosecond)
		}
		if i%3 == 0 {
			r.Email = fmt.Sprintf("u%d@example.com", i)
		}
		out[fmt.Sprintf("k%04d", i)] = r
	}
	return out
}

// declared opens a store with the table declared and the records in it.
func declared(t *testing.T, open Opener, name string, recs map[string]trec) (*store.DB, *store.Table) {
	t.Helper()
	db, _ := open(t)
	tb := tableOf(name)
	must(t, db.Declare(context.Background(), tb))
	keys := slices.Sorted(maps.Keys(recs))
	for len(keys) > 0 {
		n := min(len(keys), 200)
		must(t, db.Update(func(tx *store.Tx) error {
			for _, k := range keys[:n] {
				if err := tx.Put(name, k, recs[k]); err != nil {
					return err
				}
			}
			return nil
		}))
		keys = keys[n:]
	}
	return db, tb
}

// The reference evaluation, written apart from the engines': a field's
// value as (comparable, null).

type rv struct {
	null bool
	s    string
	n    int64
}

func refField(k string, r trec, f string) rv {
	switch f {
	case "key":
		return rv{s: k}
	case "name":
		return rv{s: r.Name}
	case "n":
		return rv{n: r.N}
	case "at":
		if r.At.IsZero() {
			return rv{null: true}
		}
		return rv{n: r.At.UnixMicro()}
	case "tag":
		return rv{s: r.Tag, null: r.Tag == ""}
	case "email":
		return rv{s: r.Email, null: r.Email == ""}
	}
	panic(f)
}

func refVal(f string, v any) rv {
	switch x := v.(type) {
	case nil:
		return rv{null: true}
	case string:
		return rv{s: x}
	case int:
		return rv{n: int64(x)}
	case int64:
		return rv{n: x}
	case time.Time:
		return rv{n: x.UnixMicro()}
	}
	panic(fmt.Sprintf("%s: %T", f, v))
}

func refCmp(a, b rv) int {
	switch {
	case a.null && b.null:
		return 0
	case a.null:
		return 1
	case b.null:
		return -1
	case a.s != b.s:
		return strings.Compare(a.s, b.s)
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}

// likeRE is a like pattern as a regular expression: ASCII letters match
// either case, % any run, _ one character, \ escapes.
func likeRE(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '%':
			b.WriteString(`.*`)
			continue
		case r == '_':
			b.WriteString(`.`)
			continue
		case r == '\\':
			i++
			r = rs[i]
		}
		if l, u := strings.ToLower(string(r)), strings.ToUpper(string(r)); r < 128 && l != u {
			b.WriteString("[" + l + u + "]")
		} else {
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

func refHolds(k string, r trec, f store.Filter) bool {
	if f.Any != nil {
		for _, g := range f.Any {
			if refHolds(k, r, g) {
				return true
			}
		}
		return false
	}
	v := refField(k, r, f.Field)
	switch f.Op {
	case store.Like:
		return !v.null && likeRE(f.Value.(string)).MatchString(v.s)
	case store.In:
		for _, x := range f.Value.([]any) {
			w := refVal(f.Field, x)
			if (w.null && v.null) || (!w.null && !v.null && refCmp(v, w) == 0) {
				return true
			}
		}
		return false
	}
	w := refVal(f.Field, f.Value)
	if w.null {
		return (f.Op == store.Eq) == v.null
	}
	if v.null {
		return f.Op == store.Ne
	}
	c := refCmp(v, w)
	return map[store.Op]bool{store.Eq: c == 0, store.Ne: c != 0, store.Gt: c > 0, store.Gte: c >= 0, store.Lt: c < 0, store.Lte: c <= 0}[f.Op]
}

// refPage is every key q selects, in q's order.
func refPage(recs map[string]trec, q store.Query) []string {
	var keys []string
	for k, r := range recs {
		ok := true
		for _, f := range q.Filters {
			ok = ok && refHolds(k, r, f)
		}
		if ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		c := 0
		for _, f := range q.Sort {
			if c = refCmp(refField(a, recs[a], f), refField(b, recs[b], f)); c != 0 {
				break
			}
		}
		if c == 0 {
			c = strings.Compare(a, b)
		}
		if q.Desc {
			return c > 0
		}
		return c < 0
	})
	return keys
}

func pageKeys(t *testing.T, db *store.DB, tb *store.Table, q store.Query) (store.RawPage, []string) {
	t.Helper()
	rp, err := db.Page(context.Background(), tb, q)
	if err != nil {
		t.Fatalf("%+v: %v", q, err)
	}
	keys := make([]string, len(rp.Items))
	for i, it := range rp.Items {
		keys[i] = it.Key
	}
	return rp, keys
}

// contractFilters exercise every operator on every type, NULLs, like's
// wildcards, case and escapes, in lists and groups of alternatives.
func contractFilters() [][]store.Filter {
	w := store.Where
	at := t0.Add(17*time.Minute + time.Microsecond + 999*time.Nanosecond)
	return [][]store.Filter{
		nil,
		{w("name", store.Eq, "alpha")},
		{w("name", store.Ne, "alpha")},
		{w("name", store.Gt, "a_b")},
		{w("name", store.Gte, "alpha"), w("name", store.Lt, "beta")},
		{w("name", store.Lte, "Zulu")},
		{w("name", store.Like, "alp%")},
		{w("name", store.Like, "%LPH_")},
		{w("name", store.Like, "éclair")},
		{w("name", store.Like, `a\_b`)},
		{w("name", store.Like, `a\%b`)},
		{w("name", store.Like, `a\\b`)},
		{w("name", store.Like, "a_b")},
		{w("name", store.Like, "%")},
		{w("name", store.Eq, "")},
		{w("name", store.In, []any{"beta", "zeta", "nope"})},
		{w("n", store.Eq, 3)},
		{w("n", store.Ne, int64(3))},
		{w("n", store.Gt, 10)},
		{w("n", store.Gte, -2), w("n", store.Lte, 4)},
		{w("n", store.Lt, 0)},
		{w("n", store.In, []any{-5, 0, 20, 99})},
		{w("at", store.Eq, nil)},
		{w("at", store.Ne, nil)},
		{w("at", store.Gte, at)},
		{w("at", store.Lt, at)},
		{w("at", store.Eq, t0.Add(5*time.Minute+123*time.Nanosecond))},
		{w("at", store.Ne, t0.Add(5*time.Minute))},
		{w("at", store.In, []any{t0.Add(time.Minute), nil})},
		{w("tag", store.Eq, "x")},
		{w("tag", store.Eq, nil)},
		{w("tag", store.Ne, "x")},
		{w("tag", store.In, []any{"y", nil})},
		{w("tag", store.Like, "%")},
		{w("tag", store.Eq, "y"), w("n", store.Gt, 3)},
		{w("tag", store.In, []any{"x", "z"}), w("n", store.Lte, 2)},
		{w("key", store.Gte, "k0100"), w("key", store.Lt, "k0150")},
		{w("key", store.In, []any{"k0003", "k0007", "k0099", "nope"})},
		{w("key", store.Like, "k00_5")},
		{w("email", store.Ne, nil), w("name", store.Eq, "beta")},
		{store.AnyOf(w("name", store.Eq, "beta"), w("tag", store.Eq, "z"))},
		{store.AnyOf(w("n", store.Eq, 1), w("key", store.In, []any{"k0010", "k0011"})), w("at", store.Ne, nil)},
		{store.AnyOf(w("name", store.Like, "%a"), w("n", store.Gt, 15)), w("tag", store.Eq, "x")},
	}
}

func testTablePage(t *testing.T, open Opener) {
	recs := tableRecords(400)
	db, tb := declared(t, open, "contract", recs)
	sorts := [][]string{nil, {"name"}, {"n"}, {"tag"}, {"tag", "n"}, {"at"}}
	for fi, fs := range contractFilters() {
		// Counts by a field's values agree with the reference.
		for _, field := range []string{"name", "n", "tag", "at"} {
			want := map[string]int{}
			for _, k := range refPage(recs, store.Query{Filters: fs}) {
				v := refField(k, recs[k], field)
				switch {
				case v.null:
				case field == "n":
					want[fmt.Sprint(v.n)]++
				case field == "at":
					want[time.UnixMicro(v.n).UTC().Format(time.RFC3339Nano)]++
				default:
					want[v.s]++
				}
			}
			var got map[string]int
			must(t, db.View(func(tx *store.Tx) error {
				var err error
				got, err = tx.CountBy(tb, fs, field)
				return err
			}))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("filters %d: count by %s\n got  %v\n want %v", fi, field, got, want)
			}
		}
		for si, s := range sorts {
			for _, desc := range []bool{false, true} {
				q := store.Query{Filters: fs, Sort: s, Desc: desc}
				want := refPage(recs, q)
				for _, pg := range [][2]int{{0, 0}, {0, 7}, {5, 3}, {max(len(want)-2, 0), 10}} {
					q.Offset, q.Limit = pg[0], pg[1]
					rp, got := pageKeys(t, db, tb, q)
					end := len(want)
					if pg[1] > 0 {
						end = min(pg[0]+pg[1], len(want))
					}
					exp := want[min(pg[0], end):end]
					if rp.Total != len(want) || !slices.Equal(got, exp) {
						t.Fatalf("filters %d sort %d desc %v page %v: total %d (want %d)\n got  %v\n want %v", fi, si, desc, pg, rp.Total, len(want), got, exp)
					}
					if (rp.Next != "") != (end < len(want) && len(got) > 0) {
						t.Fatalf("filters %d sort %d page %v: next %q with %d of %d", fi, si, pg, rp.Next, end, len(want))
					}
				}
				// Without the total: the same page.
				q.Offset, q.Limit, q.SkipTotal = 2, 5, true
				rp, got := pageKeys(t, db, tb, q)
				end := min(7, len(want))
				if rp.Total != 0 || !slices.Equal(got, want[min(2, end):end]) || (rp.Next != "") != (len(want) > 7) {
					t.Fatalf("filters %d sort %d desc %v, skipping the total: %d %v next %q, want %v", fi, si, desc, rp.Total, got, rp.Next, want[min(2, end):end])
				}
				q.SkipTotal = false
				// Walk every page by cursor: the same sequence.
				q.Offset, q.Limit = 0, 9
				var walked []string
				for {
					rp, got := pageKeys(t, db, tb, q)
					walked = append(walked, got...)
					if rp.Next == "" {
						break
					}
					q.Cursor = rp.Next
				}
				if !slices.Equal(walked, want) {
					t.Fatalf("filters %d sort %d desc %v: cursor walk\n got  %v\n want %v", fi, si, desc, walked, want)
				}
			}
		}
	}
	// Decoded pages carry the records.
	must(t, db.View(func(tx *store.Tx) error {
		pg, err := store.PageOf[trec](tx, tb, store.Query{Filters: []store.Filter{store.Where("key", store.Eq, "k0004")}})
		if err != nil {
			return err
		}
		if len(pg.Items) != 1 || pg.Keys[0] != "k0004" || pg.Items[0].Name != recs["k0004"].Name || !pg.Items[0].At.Equal(recs["k0004"].At) {
			t.Errorf("decoded page: %+v", pg)
		}
		return nil
	}))
}

// testTableIndexUpkeep changes and deletes records: their old index
// entries go with them.
func testTableIndexUpkeep(t *testing.T, open Opener) {
	recs := tableRecords(60)
	db, tb := declared(t, open, "upkeep", recs)
	rng := rand.New(rand.NewPCG(3, 3))
	keys := slices.Sorted(maps.Keys(recs))
	for round := range 4 {
		must(t, db.Update(func(tx *store.Tx) error {
			for _, k := range keys {
				switch rng.IntN(4) {
				case 0:
					if err := tx.Delete("upkeep", k); err != nil {
						return err
					}
					delete(recs, k)
				case 1, 2:
					r := recs[k]
					r.Name, r.N, r.Tag = fmt.Sprintf("n%d", rng.IntN(5)), int64(rng.IntN(7)), []string{"", "x", "q"}[rng.IntN(3)]
					if round%2 == 1 {
						r.Email = "" // frees the unique value
					}
					if err := tx.Put("upkeep", k, r); err != nil {
						return err
					}
					recs[k] = r
				}
			}
			return nil
		}))
		for _, fs := range [][]store.Filter{nil, {store.Where("name", store.Eq, "n1")}, {store.Where("tag", store.Eq, "q"), store.Where("n", store.Gte, 3)},
			{store.Where("name", store.Eq, "alpha")}, {store.Where("email", store.Ne, nil)}} {
			for _, s := range [][]string{nil, {"n"}, {"tag", "n"}} {
				q := store.Query{Filters: fs, Sort: s}
				want := refPage(recs, q)
				rp, got := pageKeys(t, db, tb, q)
				if rp.Total != len(want) || !slices.Equal(got, want) {
					t.Fatalf("round %d %+v: got %v, want %v", round, q, got, want)
				}
			}
		}
	}
}

func testTableUnique(t *testing.T, open Opener) {
	db, another := open(t)
	tb := tableOf("uniq")
	ctx := context.Background()
	must(t, db.Declare(ctx, tb))
	must(t, db.Update(func(tx *store.Tx) error {
		for i, e := range []string{"a@x", "b@x", "", ""} {
			if err := tx.Put("uniq", fmt.Sprint("k", i), trec{Name: "r", Email: e}); err != nil {
				return err
			}
		}
		return nil
	}))
	// A second record with a taken value fails the whole transaction.
	err := db.Update(func(tx *store.Tx) error {
		if err := tx.Put("uniq", "other", trec{Name: "written first"}); err != nil {
			return err
		}
		_ = tx.Put("uniq", "k9", trec{Email: "a@x"}) // ignored: the transaction fails anyway
		return nil
	})
	var dup *store.DuplicateError
	if !errors.Is(err, store.ErrDuplicate) || !errors.As(err, &dup) || dup.Index != tb.IndexName(4) || !slices.Equal(dup.Fields, []string{"email"}) {
		t.Fatalf("duplicate email: %v (%+v)", err, dup)
	}
	must(t, db.View(func(tx *store.Tx) error {
		if tx.GetRaw("uniq", "other") != nil || tx.GetRaw("uniq", "k9") != nil {
			t.Error("a transaction that broke a unique index wrote")
		}
		return nil
	}))
	// Rewriting a record with its own value, and moving a value between
	// records inside one transaction, are no duplicates.
	must(t, db.Update(func(tx *store.Tx) error {
		if err := tx.Put("uniq", "k0", trec{Name: "again", Email: "a@x"}); err != nil {
			return err
		}
		if err := tx.Put("uniq", "k1", trec{Email: "c@x"}); err != nil {
			return err
		}
		return tx.Put("uniq", "k2", trec{Email: "b@x"})
	}))
	// A deleted record frees its value.
	must(t, db.Update(func(tx *store.Tx) error { return tx.Delete("uniq", "k0") }))
	must(t, db.Update(func(tx *store.Tx) error { return tx.Put("uniq", "k5", trec{Email: "a@x"}) }))
	// Racing writers of one value on two handles: exactly one wins.
	other := another()
	must(t, other.Declare(ctx, tb))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			d := db
			if i%2 == 1 {
				d = other
			}
			errs[i] = d.Update(func(tx *store.Tx) error {
				return tx.Put("uniq", fmt.Sprint("race", i), trec{Email: "race@x"})
			})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrDuplicate):
			t.Errorf("racing duplicate: %v", err)
		}
	}
	rp, _ := pageKeys(t, db, tb, store.Query{Filters: []store.Filter{store.Where("email", store.Eq, "race@x")}})
	if won != 1 || rp.Total != 1 {
		t.Fatalf("racing writers of one unique value: %d won, %d stored", won, rp.Total)
	}
}

// testTableCursorUnderInserts pages by cursor while other writers insert:
// every record present before the walk comes exactly once, in order.
func testTableCursorUnderInserts(t *testing.T, open Opener) {
	recs := tableRecords(300)
	db, tb := declared(t, open, "walk", recs)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; i < 200; i++ { // bounded: the walk must overtake them
				select {
				case <-stop:
					return
				default:
				}
				// Keys and names land before, among and after the walk's.
				k := fmt.Sprintf("k%04d-%d-%d", (i*37)%300, w, i)
				if err := db.Update(func(tx *store.Tx) error {
					return tx.Put("walk", k, trec{Name: []string{"alpha", "beta", "zeta", "a"}[i%4], N: int64(i % 7)})
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for _, q := range []store.Query{{Sort: []string{"name"}, Limit: 13}, {Sort: []string{"n"}, Desc: true, Limit: 17},
		{Limit: 11}, {Filters: []store.Filter{store.Where("name", store.In, []any{"alpha", "beta"})}, Sort: []string{"name"}, Limit: 5}} {
		want := refPage(recs, q)
		pos := map[string]int{}
		for i, k := range want {
			pos[k] = i
		}
		seen := map[string]bool{}
		last := -1
		for {
			rp, got := pageKeys(t, db, tb, q)
			for _, k := range got {
				if seen[k] {
					t.Fatalf("%+v: %s twice", q, k)
				}
				seen[k] = true
				if i, old := pos[k]; old {
					if i < last {
						t.Fatalf("%+v: %s out of order", q, k)
					}
					last = i
				}
			}
			if rp.Next == "" {
				break
			}
			q.Cursor = rp.Next
		}
		for _, k := range want {
			if !seen[k] {
				t.Fatalf("%+v: %s (there before the walk) never came", q, k)
			}
		}
	}
}

func testTableQueryErrors(t *testing.T, open Opener) {
	db, tb := declared(t, open, "errs", tableRecords(5))
	other := store.Declare("errs_other", []store.Field[trec]{store.Text("name", func(r *trec) string { return r.Name })},
		store.Index{Fields: []string{"name"}, Sort: true})
	must(t, db.Declare(context.Background(), other))
	must(t, db.Update(func(tx *store.Tx) error {
		if err := tx.Put("errs_other", "a", trec{Name: "a"}); err != nil {
			return err
		}
		return tx.Put("errs_other", "b", trec{Name: "b"})
	}))
	good, err := db.Page(context.Background(), tb, store.Query{Limit: 2})
	if err != nil || good.Next == "" {
		t.Fatalf("first page: %v %+v", err, good)
	}
	otherPage, _ := db.Page(context.Background(), other, store.Query{Limit: 1, Sort: []string{"name"}})
	for _, c := range []struct {
		q     store.Query
		field string
	}{
		{store.Query{Filters: []store.Filter{store.Where("nope", store.Eq, "x")}}, "nope"},
		{store.Query{Filters: []store.Filter{store.Where("name", "contains", "x")}}, "name"},
		{store.Query{Filters: []store.Filter{store.Where("name", store.Eq, 3)}}, "name"},
		{store.Query{Filters: []store.Filter{store.Where("n", store.Eq, "3")}}, "n"},
		{store.Query{Filters: []store.Filter{store.Where("n", store.Eq, 1.5)}}, "n"},
		{store.Query{Filters: []store.Filter{store.Where("at", store.Gt, "2026-01-01")}}, "at"},
		{store.Query{Filters: []store.Filter{store.Where("n", store.Like, "1%")}}, "n"},
		{store.Query{Filters: []store.Filter{store.Where("name", store.Like, `ab\`)}}, "name"},
		{store.Query{Filters: []store.Filter{store.Where("name", store.Gt, nil)}}, "name"},
		{store.Query{Filters: []store.Filter{store.Where("name", store.In, "x")}}, "name"},
		{store.Query{Filters: []store.Filter{store.Where("name", store.In, make([]string, store.MaxInValues+1))}}, "name"},
		{store.Query{Filters: []store.Filter{store.Where("name", store.Eq, "a\x00b")}}, "name"},
		{store.Query{Filters: []store.Filter{store.AnyOf(store.AnyOf(store.Where("n", store.Eq, 1)))}}, ""},
		{store.Query{Sort: []string{"email"}}, "sort"},
		{store.Query{Sort: []string{"n", "name"}}, "sort"},
		{store.Query{Limit: -1}, "limit"},
		{store.Query{Limit: store.MaxPage + 1}, "limit"},
		{store.Query{Offset: -1}, "offset"},
		{store.Query{Offset: 1, Cursor: good.Next}, "cursor"},
		{store.Query{Cursor: "not a cursor"}, "cursor"},
		{store.Query{Cursor: good.Next, Desc: true}, "cursor"},                  // another order's
		{store.Query{Cursor: otherPage.Next, Sort: []string{"name"}}, "cursor"}, // another table's
	} {
		_, err := db.Page(context.Background(), tb, c.q)
		var qe *store.QueryError
		if !errors.As(err, &qe) || qe.Field != c.field || qe.Rule == "" {
			t.Errorf("%+v: want a QueryError on %q, got %v", c.q, c.field, err)
		}
	}
	// An index over (tag, n) sorts by n the records whose tag a filter
	// fixes, and only those.
	byTag := store.Declare("errs_by_tag", []store.Field[trec]{
		store.OptionalText("tag", func(r *trec) string { return r.Tag }),
		store.Int("n", func(r *trec) int64 { return r.N }),
	}, store.Index{Fields: []string{"tag", "n"}, Sort: true})
	must(t, db.Declare(context.Background(), byTag))
	must(t, db.Update(func(tx *store.Tx) error {
		for i, r := range []trec{{Tag: "x", N: 3}, {Tag: "y", N: 1}, {Tag: "x", N: 1}, {N: 2}} {
			if err := tx.Put("errs_by_tag", fmt.Sprint("t", i), r); err != nil {
				return err
			}
		}
		return nil
	}))
	var qe *store.QueryError
	if _, err := db.Page(context.Background(), byTag, store.Query{Sort: []string{"n"}}); !errors.As(err, &qe) || qe.Field != "sort" {
		t.Errorf("sort by the second field of an index, the first free: %v", err)
	}
	for _, c := range []struct {
		f    store.Filter
		want string
	}{{store.Where("tag", store.Eq, "x"), "t2,t0"}, {store.Where("tag", store.In, []any{"x", "y"}), "t1,t2,t0"}} {
		rp, keys := pageKeys(t, db, byTag, store.Query{Filters: []store.Filter{c.f}, Sort: []string{"n"}})
		if strings.Join(keys, ",") != c.want || rp.Total != len(keys) {
			t.Errorf("sort by n where %+v: %v, want %s", c.f, keys, c.want)
		}
	}
	// A table declared nowhere on this store.
	if _, err := db.Page(context.Background(), tableOf("never_declared"), store.Query{}); err == nil {
		t.Error("Page of an undeclared table answered")
	}
	// Bad field values are refused at write time, nothing written.
	err = db.Update(func(tx *store.Tx) error { return tx.Put("errs", "bad", trec{Name: "a\x00b"}) })
	if !errors.Is(err, store.ErrBadValue) {
		t.Errorf("NUL in a text field: %v", err)
	}
	err = db.Update(func(tx *store.Tx) error {
		return tx.Put("errs", "bad", trec{Name: strings.Repeat("x", store.MaxKeyLen+1)})
	})
	if !errors.Is(err, store.ErrBadValue) {
		t.Errorf("an indexed text over MaxKeyLen: %v", err)
	}
	err = db.Update(func(tx *store.Tx) error { return tx.PutRaw("errs", "bad", []byte("not json")) })
	if err == nil {
		t.Error("PutRaw of a non-record into a table succeeded")
	}
}

// testTableDeclareMigrates declares a table over a bucket that already
// holds records (a store written before the declaration), then changes
// the declaration: rows and indexes follow, every handle reads them, and
// an undeclared writer is refused.
func testTableDeclareMigrates(t *testing.T, open Opener) {
	db, another := open(t)
	ctx := context.Background()
	recs := tableRecords(120)
	must(t, db.Update(func(tx *store.Tx) error {
		for k, r := range recs {
			if err := tx.Put("legacy", k, r); err != nil {
				return err
			}
		}
		return tx.PutRaw("plain", "x", []byte("1"))
	}))
	tb := tableOf("legacy")
	must(t, db.Declare(ctx, tb))
	must(t, db.Declare(ctx, tb)) // idempotent
	check := func(db *store.DB, tb *store.Table) {
		t.Helper()
		for _, q := range []store.Query{{Filters: []store.Filter{store.Where("name", store.Eq, "beta")}, Sort: []string{"n"}},
			{Filters: []store.Filter{store.Where("email", store.Ne, nil)}}} {
			want := refPage(recs, q)
			rp, got := pageKeys(t, db, tb, q)
			if rp.Total != len(want) || !slices.Equal(got, want) {
				t.Fatalf("%+v after migration: got %v, want %v", q, got, want)
			}
		}
		must(t, db.View(func(tx *store.Tx) error {
			if n := tx.Count("legacy"); n != len(recs) {
				t.Errorf("count %d, want %d", n, len(recs))
			}
			var r trec
			if ok, err := tx.Get("legacy", "k0007", &r); !ok || err != nil || r.Name != recs["k0007"].Name {
				t.Errorf("get after migration: %v %v %+v", ok, err, r)
			}
			return nil
		}))
	}
	check(db, tb)
	// A changed declaration (a field gone, an index added) migrates too.
	tb2 := store.Declare("legacy", []store.Field[trec]{
		store.Text("name", func(r *trec) string { return r.Name }),
		store.Int("n", func(r *trec) int64 { return r.N }),
		store.OptionalText("email", func(r *trec) string { return r.Email }),
	}, store.Index{Fields: []string{"name", "n"}, Sort: true}, store.Index{Fields: []string{"email"}, Unique: true})
	other := another()
	if other == db {
		// bbolt: one handle per file; a reopen takes the new declaration.
		return
	}
	must(t, other.Declare(ctx, tb2))
	q := store.Query{Filters: []store.Filter{store.Where("name", store.Eq, "alpha")}, Sort: []string{"name", "n"}}
	want := refPage(recs, q)
	if _, got := pageKeys(t, other, tb2, q); !slices.Equal(got, want) {
		t.Fatalf("after the declaration changed: got %v, want %v", got, want)
	}
	// A handle that has not declared the table reads it but cannot write.
	third := another()
	must(t, third.View(func(tx *store.Tx) error {
		if tx.GetRaw("legacy", "k0001") == nil {
			t.Error("an undeclared handle does not read the table")
		}
		return nil
	}))
	if err := third.Update(func(tx *store.Tx) error { return tx.Put("legacy", "k0001", recs["k0001"]) }); !errors.Is(err, store.ErrUndeclared) {
		t.Errorf("undeclared write: %v", err)
	}
}

// testTableReopen declares, closes and reopens a bbolt-style handle:
// the catalog survives and a changed declaration rebuilds.
func testTableDeclaredTwiceDiffers(t *testing.T, open Opener) {
	db, _ := open(t)
	must(t, db.Declare(context.Background(), tableOf("twice")))
	other := store.Declare("twice", []store.Field[trec]{store.Text("name", func(r *trec) string { return r.Name })})
	if err := db.Declare(context.Background(), other); err == nil {
		t.Fatal("a second, different declaration of one name on one handle was accepted")
	}
}
