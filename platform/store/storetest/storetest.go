// Package storetest is the contract every store engine keeps, as one test
// suite: each engine's tests call Run with a way to open it, so bbolt and
// PostgreSQL are held to the same behaviour (ordering, scans, sequences,
// rollback, exact counters under racing transactions, notifications).
package storetest

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/platform/store"
)

type rec struct {
	Name string            `json:"name"`
	N    int               `json:"n"`
	Tags []string          `json:"tags,omitempty"`
	M    map[string]string `json:"m,omitempty"`
}

func testGetPutDelete(t *testing.T, open Opener) {
	db, _ := open(t)
	want := rec{Name: "Zoë \"q\" <b>", N: 7, Tags: []string{"x", "y"}, M: map[string]string{"z": "1", "a": "2"}}
	must(t, db.Update(func(tx *store.Tx) error { return tx.Put("b", "k", want) }))
	must(t, db.View(func(tx *store.Tx) error {
		var got rec
		if ok, err := tx.Get("b", "k", &got); !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("get: %v %v %+v", ok, err, got)
		}
		var decoded rec // GetRaw of a Put value is equivalent JSON
		if err := json.Unmarshal(tx.GetRaw("b", "k"), &decoded); err != nil || !reflect.DeepEqual(decoded, want) {
			t.Errorf("getraw: %v %+v", err, decoded)
		}
		for _, miss := range [][2]string{{"b", "nope"}, {"nobucket", "k"}} {
			var r rec
			if ok, err := tx.Get(miss[0], miss[1], &r); ok || err != nil {
				t.Errorf("missing %v: %v %v", miss, ok, err)
			}
			if raw := tx.GetRaw(miss[0], miss[1]); raw != nil {
				t.Errorf("missing %v: raw %q", miss, raw)
			}
		}
		return nil
	}))
	must(t, db.Update(func(tx *store.Tx) error {
		if err := tx.Put("b", "k", rec{Name: "second"}); err != nil {
			return err
		}
		if err := tx.Delete("b", "absent"); err != nil {
			return err
		}
		return tx.Delete("nobucket", "absent")
	}))
	must(t, db.View(func(tx *store.Tx) error {
		var got rec
		if ok, _ := tx.Get("b", "k", &got); !ok || got.Name != "second" || got.N != 0 {
			t.Errorf("overwrite: %+v", got)
		}
		return nil
	}))
	must(t, db.Update(func(tx *store.Tx) error { return tx.Delete("b", "k") }))
	must(t, db.View(func(tx *store.Tx) error {
		if raw := tx.GetRaw("b", "k"); raw != nil {
			t.Errorf("deleted key reads %q", raw)
		}
		return nil
	}))
}

func testRawValues(t *testing.T, open Opener) {
	db, _ := open(t)
	binary := make([]byte, 64)
	_, _ = crand.Read(binary)
	binary[0], binary[1] = 0, 0xff
	raws := map[string][]byte{
		"binary": binary,
		"id":     []byte("usr_0123"),
		"number": []byte("1e5"), // valid JSON a jsonb column would rewrite
		"object": []byte(`{"b":1,  "a":2}`),
		"empty":  {},
	}
	nul := rec{Name: "a\x00b"} // JSON with \u0000, which jsonb refuses
	must(t, db.Update(func(tx *store.Tx) error {
		for k, v := range raws {
			if err := tx.PutRaw("raw", k, v); err != nil {
				return err
			}
		}
		return tx.Put("raw", "nul", nul)
	}))
	must(t, db.View(func(tx *store.Tx) error {
		for k, v := range raws {
			if got := tx.GetRaw("raw", k); got == nil || !bytes.Equal(got, v) {
				t.Errorf("PutRaw %s: got %q, want %q", k, got, v)
			}
		}
		var got rec
		if ok, err := tx.Get("raw", "nul", &got); !ok || err != nil || !reflect.DeepEqual(got, nul) {
			t.Errorf("NUL in JSON: %v %v %q", ok, err, got.Name)
		}
		seen := map[string][]byte{}
		_ = tx.ForEach("raw", func(k string, v []byte) error { seen[k] = slices.Clone(v); return nil })
		for k, v := range raws {
			if !bytes.Equal(seen[k], v) {
				t.Errorf("scan %s: got %q, want %q", k, seen[k], v)
			}
		}
		return nil
	}))
}

// rawsOf renders GetRawMany's answer for comparison: "<nil>" for absent.
func rawsOf(vals [][]byte) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "<nil>"
		if v != nil {
			out[i] = string(v)
		}
	}
	return out
}

func testGetMany(t *testing.T, open Opener) {
	db, _ := open(t)
	must(t, db.Update(func(tx *store.Tx) error {
		for _, k := range []string{"a", "b", "c", "日本"} {
			if err := tx.PutRaw("m", k, []byte("v-"+k)); err != nil {
				return err
			}
		}
		if err := tx.PutRaw("m", "empty", nil); err != nil {
			return err
		}
		return tx.Put("m", "json", rec{Name: "j", N: 3})
	}))
	must(t, db.View(func(tx *store.Tx) error {
		for _, c := range []struct {
			bucket string
			keys   []string
			want   []string
		}{
			{"m", nil, []string{}},
			{"m", []string{}, []string{}},
			{"m", []string{"c", "a", "b"}, []string{"v-c", "v-a", "v-b"}},
			{"m", []string{"b", "b", "nope", "b", "日本"}, []string{"v-b", "v-b", "<nil>", "v-b", "v-日本"}},
			{"m", []string{"nope", "", "a\x00b", "empty", strings.Repeat("k", store.MaxKeyLen+1), "a"},
				[]string{"<nil>", "<nil>", "<nil>", "", "<nil>", "v-a"}},
			{"nobucket", []string{"a", "b"}, []string{"<nil>", "<nil>"}},
			{"", []string{"a"}, []string{"<nil>"}},
		} {
			got, err := tx.GetRawMany(c.bucket, c.keys)
			if err != nil || len(got) != len(c.keys) || !slices.Equal(rawsOf(got), c.want) {
				t.Errorf("GetRawMany(%q, %q) = %q, %v; want %q", c.bucket, c.keys, rawsOf(got), err, c.want)
			}
		}
		var decoded rec // a Put value reads back as equivalent JSON
		got, err := tx.GetRawMany("m", []string{"json"})
		if err != nil || json.Unmarshal(got[0], &decoded) != nil || !reflect.DeepEqual(decoded, rec{Name: "j", N: 3}) {
			t.Errorf("GetRawMany of a Put value: %q %v", rawsOf(got), err)
		}
		recs, err := store.GetMany[rec](tx, "m", []string{"nope", "json", "json"})
		if err != nil || len(recs) != 3 || recs[0] != nil || recs[1] == nil || !reflect.DeepEqual(*recs[1], rec{Name: "j", N: 3}) ||
			recs[2] == nil || !reflect.DeepEqual(*recs[2], *recs[1]) {
			t.Errorf("GetMany: %v %v", recs, err)
		}
		if _, err := store.GetMany[rec](tx, "m", []string{"a"}); err == nil || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("GetMany of a value that is not the type's JSON: %v", err)
		}
		return nil
	}))
}

// testGetManyLarge reads more keys than one engine call takes, present and
// missing, shuffled and repeated across chunk boundaries.
func testGetManyLarge(t *testing.T, open Opener) {
	db, _ := open(t)
	n := 2*store.MaxKeysPerRead + 17
	must(t, db.Update(func(tx *store.Tx) error {
		for i := 0; i < n; i += 2 {
			if err := tx.PutRaw("big", fmt.Sprintf("k%05d", i), []byte(fmt.Sprint(i))); err != nil {
				return err
			}
		}
		return nil
	}))
	keys := make([]string, 0, n+n/3)
	for i := range n {
		keys = append(keys, fmt.Sprintf("k%05d", i))
	}
	for i := 0; i < n; i += 3 {
		keys = append(keys, keys[i])
	}
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	must(t, db.View(func(tx *store.Tx) error {
		got, err := tx.GetRawMany("big", keys)
		if err != nil || len(got) != len(keys) {
			t.Fatalf("%d values for %d keys, %v", len(got), len(keys), err)
		}
		for i, k := range keys {
			var want []byte
			if j, _ := strconv.Atoi(k[1:]); j%2 == 0 {
				want = []byte(fmt.Sprint(j))
			}
			if (got[i] == nil) != (want == nil) || !bytes.Equal(got[i], want) {
				t.Fatalf("key %d %q: got %q, want %q", i, k, got[i], want)
			}
		}
		return nil
	}))
}

// testGetManyOwnWrites reads values written, overwritten and deleted
// earlier in the same transaction, and nothing once it rolled back.
func testGetManyOwnWrites(t *testing.T, open Opener) {
	db, _ := open(t)
	must(t, db.Update(func(tx *store.Tx) error {
		for _, k := range []string{"old", "gone", "same"} {
			if err := tx.PutRaw("w", k, []byte(k+"1")); err != nil {
				return err
			}
		}
		return nil
	}))
	keys := []string{"old", "new", "gone", "same", "other-bucket"}
	boom := errors.New("boom")
	err := db.Update(func(tx *store.Tx) error {
		for _, op := range []error{
			tx.PutRaw("w", "old", []byte("old2")),
			tx.PutRaw("w", "new", []byte("new2")),
			tx.Delete("w", "gone"),
			tx.PutRaw("w2", "other-bucket", []byte("x")),
		} {
			if op != nil {
				return op
			}
		}
		got, err := tx.GetRawMany("w", keys)
		if want := []string{"old2", "new2", "<nil>", "same1", "<nil>"}; err != nil || !slices.Equal(rawsOf(got), want) {
			t.Errorf("inside the transaction: %q %v, want %q", rawsOf(got), err, want)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	must(t, db.View(func(tx *store.Tx) error {
		got, err := tx.GetRawMany("w", keys)
		if want := []string{"old1", "<nil>", "gone1", "same1", "<nil>"}; err != nil || !slices.Equal(rawsOf(got), want) {
			t.Errorf("after rollback: %q %v, want %q", rawsOf(got), err, want)
		}
		return nil
	}))
}

func testBadKeys(t *testing.T, open Opener) {
	db, _ := open(t)
	long := strings.Repeat("k", store.MaxKeyLen+1)
	for _, bk := range [][2]string{{"", "k"}, {"b", ""}, {"b", "a\x00b"}, {"b", "\xff\xfe"}, {"b", long}, {"b\x00", "k"}} {
		err := db.Update(func(tx *store.Tx) error { return tx.Put(bk[0], bk[1], 1) })
		if !errors.Is(err, store.ErrBadKey) {
			t.Errorf("put %q/%q: want ErrBadKey, got %v", bk[0], bk[1], err)
		}
		must(t, db.View(func(tx *store.Tx) error {
			var v int
			if ok, err := tx.Get(bk[0], bk[1], &v); ok || err != nil {
				t.Errorf("get %q/%q: %v %v", bk[0], bk[1], ok, err)
			}
			return nil
		}))
	}
	ok := strings.Repeat("k", store.MaxKeyLen)
	must(t, db.Update(func(tx *store.Tx) error { return tx.Put("b", ok, 1) }))
	err := db.View(func(tx *store.Tx) error {
		return tx.Scan("b", store.ScanOptions{Prefix: "\xff"}, func(string, []byte) error { return nil })
	})
	if !errors.Is(err, store.ErrBadKey) {
		t.Errorf("scan with a bad prefix: %v", err)
	}
}

// orderKeys are keys whose byte order differs from case-folded, numeric and
// locale orders.
var orderKeys = []string{"B", "a", "A", "b", "é", "e", "E", "z", "Z", "10", "9", "ä", "日本", "日", "\U0001F600",
	"\uffff", "\U0010ffff", "a b", "a\tb", "a\x01", "~", "aa", "a", "ab", "a-", "a_", "\u00a0", "ß", "ss", "İ", "i"}

func sortedUnique(keys []string) []string {
	out := slices.Clone(keys)
	sort.Strings(out) // Go compares strings bytewise
	return slices.Compact(out)
}

func putKeys(t *testing.T, db *store.DB, bucket string, keys []string) {
	t.Helper()
	shuffled := slices.Clone(keys)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	must(t, db.Update(func(tx *store.Tx) error {
		for _, k := range shuffled {
			if err := tx.Put(bucket, k, k); err != nil {
				return err
			}
		}
		return nil
	}))
}

func scanKeys(t *testing.T, db *store.DB, bucket string, o store.ScanOptions) []string {
	t.Helper()
	var keys []string
	must(t, db.View(func(tx *store.Tx) error {
		return tx.Scan(bucket, o, func(k string, raw []byte) error {
			var v string
			if err := json.Unmarshal(raw, &v); err != nil || v != k {
				t.Errorf("key %q holds %q (%v)", k, raw, err)
			}
			keys = append(keys, k)
			return nil
		})
	}))
	return keys
}

func testByteOrder(t *testing.T, open Opener) {
	db, _ := open(t)
	putKeys(t, db, "o", orderKeys)
	want := sortedUnique(orderKeys)
	if got := scanKeys(t, db, "o", store.ScanOptions{}); !slices.Equal(got, want) {
		t.Errorf("forward order\n got %q\nwant %q", got, want)
	}
	slices.Reverse(want)
	if got := scanKeys(t, db, "o", store.ScanOptions{Reverse: true}); !slices.Equal(got, want) {
		t.Errorf("reverse order\n got %q\nwant %q", got, want)
	}
}

// model is what a scan must return, computed from the sorted keys.
func model(sorted []string, o store.ScanOptions) []string {
	var out []string
	for _, k := range sorted {
		if !strings.HasPrefix(k, o.Prefix) {
			continue
		}
		if o.Start != "" {
			if !o.Reverse && (k < o.Start || (o.Exclusive && k == o.Start)) {
				continue
			}
			if o.Reverse && (k > o.Start || (o.Exclusive && k == o.Start)) {
				continue
			}
		}
		out = append(out, k)
	}
	if o.Reverse {
		slices.Reverse(out)
	}
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return out
}

func testScan(t *testing.T, open Opener) {
	db, _ := open(t)
	keys := append(slices.Clone(orderKeys), "user:1", "user:10", "user:2", "user:20", "user:3", "users", "user;",
		"usr", "日本語", "日本人", "é1", "é2", "\U0010ffff\U0010ffff", "\U0010ffffa")
	putKeys(t, db, "s", keys)
	sorted := sortedUnique(keys)
	var cases []store.ScanOptions
	for _, prefix := range []string{"", "user:", "user", "u", "a", "日本", "é", "\U0010ffff", "nothing", "~~"} {
		for _, start := range []string{"", "user:2", "user:15", "a", "b", "0", "\U0010ffff", "日本人", "zzz", "user:"} {
			for _, limit := range []int{0, 1, 3} {
				for _, rev := range []bool{false, true} {
					for _, excl := range []bool{false, true} {
						if excl && start == "" {
							continue
						}
						cases = append(cases, store.ScanOptions{Prefix: prefix, Start: start, Reverse: rev, Limit: limit, Exclusive: excl})
					}
				}
			}
		}
	}
	must(t, db.View(func(tx *store.Tx) error {
		for _, o := range cases {
			var got []string
			if err := tx.Scan("s", o, func(k string, _ []byte) error { got = append(got, k); return nil }); err != nil {
				return err
			}
			if want := model(sorted, o); !slices.Equal(got, want) {
				t.Errorf("scan %+v\n got %q\nwant %q", o, got, want)
			}
			if want := len(model(sorted, store.ScanOptions{Prefix: o.Prefix})); o.Start == "" && o.Limit == 0 &&
				!o.Reverse && tx.CountPrefix("s", o.Prefix) != want {
				t.Errorf("CountPrefix(%q) = %d, want %d", o.Prefix, tx.CountPrefix("s", o.Prefix), want)
			}
		}
		return tx.Scan("missing", store.ScanOptions{}, func(string, []byte) error {
			t.Error("a missing bucket has entries")
			return nil
		})
	}))
}

// testScanPages scans more entries than an engine reads at once and pages
// through them both ways with Exclusive starts.
func testScanPages(t *testing.T, open Opener) {
	db, _ := open(t)
	var keys []string
	for i := range 700 {
		keys = append(keys, store.SeqKey(uint64(i)))
	}
	putKeys(t, db, "p", keys)
	if got := scanKeys(t, db, "p", store.ScanOptions{}); !slices.Equal(got, keys) {
		t.Fatalf("forward: %d keys", len(got))
	}
	for _, rev := range []bool{false, true} {
		var all []string
		o := store.ScanOptions{Limit: 300, Reverse: rev}
		for {
			page := scanKeys(t, db, "p", o)
			all = append(all, page...)
			if len(page) < o.Limit {
				break
			}
			o.Start, o.Exclusive = page[len(page)-1], true
		}
		want := slices.Clone(keys)
		if rev {
			slices.Reverse(want)
		}
		if !slices.Equal(all, want) {
			t.Errorf("paging reverse=%v: %d keys, first %q", rev, len(all), all[:min(3, len(all))])
		}
	}
}

func testScanStop(t *testing.T, open Opener) {
	db, _ := open(t)
	putKeys(t, db, "x", []string{"a", "b", "c", "d", "e"})
	boom := errors.New("boom")
	must(t, db.View(func(tx *store.Tx) error {
		n := 0
		err := tx.ForEach("x", func(string, []byte) error {
			if n++; n == 3 {
				return store.ErrStop
			}
			return nil
		})
		if err != nil || n != 3 {
			t.Errorf("ErrStop: err %v after %d", err, n)
		}
		n = 0
		err = tx.ForEachPrefix("x", "", func(string, []byte) error { n++; return fmt.Errorf("wrapped: %w", boom) })
		if !errors.Is(err, boom) || n != 1 {
			t.Errorf("error from fn: %v after %d", err, n)
		}
		return nil
	}))
}

func testWritesDuringScan(t *testing.T, open Opener) {
	db, _ := open(t)
	var keys []string
	for i := range 600 {
		keys = append(keys, fmt.Sprintf("k%04d", i))
	}
	putKeys(t, db, "w", keys)
	for _, rev := range []bool{false, true} {
		visited := 0
		must(t, db.Update(func(tx *store.Tx) error {
			visited = 0
			return tx.Scan("w", store.ScanOptions{Reverse: rev}, func(k string, _ []byte) error {
				visited++
				if err := tx.Put("w", k, k+"!"); err != nil { // rewrite the current key
					return err
				}
				if err := tx.Put("other", k, 1); err != nil {
					return err
				}
				return nil
			})
		}))
		if visited != len(keys) {
			t.Errorf("rewriting (reverse=%v) visited %d of %d", rev, visited, len(keys))
		}
	}
	// The janitor's pattern: delete while visiting.
	visited := 0
	must(t, db.Update(func(tx *store.Tx) error {
		visited = 0
		return tx.ForEach("w", func(k string, _ []byte) error {
			visited++
			return tx.Delete("w", k)
		})
	}))
	must(t, db.View(func(tx *store.Tx) error {
		if n := tx.Count("w"); visited != len(keys) || n != 0 {
			t.Errorf("delete while scanning: visited %d, %d left", visited, n)
		}
		return nil
	}))
}

func testCounts(t *testing.T, open Opener) {
	db, _ := open(t)
	putKeys(t, db, "c", []string{"a1", "a2", "a3", "b1", "日1", "日2"})
	must(t, db.View(func(tx *store.Tx) error {
		for _, c := range []struct {
			prefix string
			n      int
		}{{"", 6}, {"a", 3}, {"b", 1}, {"日", 2}, {"c", 0}, {"a1x", 0}} {
			if got := tx.CountPrefix("c", c.prefix); got != c.n {
				t.Errorf("CountPrefix(%q) = %d, want %d", c.prefix, got, c.n)
			}
		}
		if tx.Count("c") != 6 || tx.Count("missing") != 0 {
			t.Errorf("Count: %d, missing %d", tx.Count("c"), tx.Count("missing"))
		}
		return nil
	}))
}

func testRollback(t *testing.T, open Opener) {
	db, _ := open(t)
	must(t, db.Update(func(tx *store.Tx) error {
		if _, err := tx.NextSeq("r"); err != nil {
			return err
		}
		return tx.Put("r", "keep", rec{Name: "a", N: 1})
	}))
	boom := errors.New("boom")
	err := db.Update(func(tx *store.Tx) error {
		for _, op := range []error{
			tx.Put("r", "keep", rec{Name: "changed"}),
			tx.Put("r", "new", rec{}),
			tx.Put("newbucket", "k", 1),
			tx.PutRaw("r", "raw", []byte("x")),
		} {
			if op != nil {
				return op
			}
		}
		if _, err := tx.NextSeq("r"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	must(t, db.Update(func(tx *store.Tx) error {
		var got rec
		if ok, _ := tx.Get("r", "keep", &got); !ok || got.Name != "a" || got.N != 1 {
			t.Errorf("rolled-back write leaked: %+v", got)
		}
		if tx.GetRaw("r", "new") != nil || tx.GetRaw("newbucket", "k") != nil || tx.GetRaw("r", "raw") != nil {
			t.Error("rolled-back insert leaked")
		}
		if n, err := tx.NextSeq("r"); err != nil || n != 2 {
			t.Errorf("sequence after rollback: %d %v (a rolled-back number is used again)", n, err)
		}
		return nil
	}))
}

func testReadOnly(t *testing.T, open Opener) {
	db, _ := open(t)
	must(t, db.View(func(tx *store.Tx) error {
		if tx.Writable() {
			t.Error("View is writable")
		}
		if err := tx.Put("b", "k", 1); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Put in View: %v", err)
		}
		if err := tx.Delete("b", "k"); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("Delete in View: %v", err)
		}
		if _, err := tx.NextSeq("b"); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("NextSeq in View: %v", err)
		}
		return nil
	}))
}

func testSequences(t *testing.T, open Opener) {
	db, _ := open(t)
	var got []uint64
	for range 3 {
		must(t, db.Update(func(tx *store.Tx) error {
			for range 4 {
				n, err := tx.NextSeq("q")
				if err != nil {
					return err
				}
				got = append(got, n)
			}
			_, err := tx.NextSeq("other")
			return err
		}))
	}
	if want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(got, want) {
		t.Errorf("sequence %v", got)
	}
	if store.SeqKey(9) >= store.SeqKey(10) {
		t.Error("SeqKey does not sort")
	}
}

// testConcurrentSequences takes numbers from racing transactions on two
// handles (replicas): every number is handed out exactly once.
func testConcurrentSequences(t *testing.T, open Opener) {
	db, another := open(t)
	dbs := []*store.DB{db, another()}
	const workers, each = 8, 25
	var mu sync.Mutex
	var all []uint64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				var n uint64
				err := dbs[w%2].Update(func(tx *store.Tx) error {
					var err error
					if n, err = tx.NextSeq("cs"); err != nil {
						return err
					}
					return tx.Put("cs", store.SeqKey(n), w)
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(all)
	for i, n := range all {
		if n != uint64(i+1) {
			t.Fatalf("numbers not 1..%d: at %d got %d", workers*each, i, n)
		}
	}
	must(t, db.View(func(tx *store.Tx) error {
		if c := tx.Count("cs"); c != workers*each {
			t.Errorf("%d records, want %d", c, workers*each)
		}
		return nil
	}))
}

// testConcurrentCounter is a read-modify-write of one value from racing
// transactions on two handles: the total is exact only if conflicting
// transactions are detected and run again.
func testConcurrentCounter(t *testing.T, open Opener) {
	db, another := open(t)
	dbs := []*store.DB{db, another()}
	const workers, each = 50, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				err := dbs[w%2].Update(func(tx *store.Tx) error {
					var n int
					if _, err := tx.Get("counter", "n", &n); err != nil {
						return err
					}
					return tx.Put("counter", "n", n+1)
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var n int
	must(t, db.View(func(tx *store.Tx) error { _, err := tx.Get("counter", "n", &n); return err }))
	if n != workers*each {
		t.Errorf("counter = %d, want %d", n, workers*each)
	}
}

// testLockingCounter: UpdateLocking transactions that read with
// GetForUpdate are exact under racing writers on two handles, for a
// plain bucket and a declared table, without re-running (on PostgreSQL
// they queue on the row lock at READ COMMITTED).
func testLockingCounter(t *testing.T, open Opener) {
	db, another := open(t)
	other := another()
	tb := tableOf("locked")
	must(t, db.Declare(context.Background(), tb))
	must(t, other.Declare(context.Background(), tb))
	dbs := []*store.DB{db, other}
	must(t, db.Update(func(tx *store.Tx) error {
		if err := tx.Put("lcounter", "n", 0); err != nil {
			return err
		}
		return tx.Put("locked", "n", trec{Name: "counter"})
	}))
	const workers, each = 24, 15
	var runs atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				err := dbs[w%2].UpdateLocking(context.Background(), func(tx *store.Tx) error {
					runs.Add(1)
					var n int
					if _, err := tx.GetForUpdate("lcounter", "n", &n); err != nil {
						return err
					}
					var r trec
					if _, err := tx.GetForUpdate("locked", "n", &r); err != nil {
						return err
					}
					r.N++
					if err := tx.Put("locked", "n", r); err != nil {
						return err
					}
					return tx.Put("lcounter", "n", n+1)
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var n int
	var r trec
	must(t, db.View(func(tx *store.Tx) error {
		if _, err := tx.Get("lcounter", "n", &n); err != nil {
			return err
		}
		_, err := tx.Get("locked", "n", &r)
		return err
	}))
	if err := db.View(func(tx *store.Tx) error { _, err := tx.GetForUpdate("lcounter", "n", &n); return err }); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("GetForUpdate in a View: %v", err)
	}
	if n != workers*each || r.N != workers*each {
		t.Errorf("counters %d and %d, want %d", n, r.N, workers*each)
	}
	if runs.Load() != workers*each {
		t.Errorf("%d runs of %d transactions: locking updates re-ran", runs.Load(), workers*each)
	}
	rp, _ := pageKeys(t, db, tb, store.Query{Filters: []store.Filter{store.Where("n", store.Eq, workers*each)}})
	if rp.Total != 1 {
		t.Errorf("the table's index did not follow the locked writes: %d", rp.Total)
	}
}

func testAfterCommit(t *testing.T, open Opener) {
	db, another := open(t)
	dbs := []*store.DB{db, another()}
	var mu sync.Mutex
	ran := 0
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			err := dbs[w%2].Update(func(tx *store.Tx) error {
				var n int
				_, _ = tx.Get("ac", "n", &n)
				tx.AfterCommit(func() { mu.Lock(); ran++; mu.Unlock() })
				return tx.Put("ac", "n", n+1)
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	_ = db.Update(func(tx *store.Tx) error {
		tx.AfterCommit(func() { t.Error("AfterCommit ran for a rolled-back transaction") })
		return errors.New("roll back")
	})
	if ran != 6 {
		t.Errorf("AfterCommit ran %d times for 6 commits", ran)
	}
}

func testNotifications(t *testing.T, open Opener) {
	db, another := open(t)
	other := another()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	here, there := db.Subscribe(ctx, "keys"), other.Subscribe(ctx, "keys")
	unrelated := other.Subscribe(ctx, "unrelated")
	// A subscription is live once a message published after it arrives.
	deadline := time.Now().Add(10 * time.Second)
	for ready := false; !ready; {
		must(t, db.Publish(ctx, "keys", "ping"))
		select {
		case <-there:
			ready = true
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no notification reached the other handle")
			}
		}
	}
	drain(here)
	drain(there)
	_ = db.Update(func(tx *store.Tx) error {
		must(t, tx.Publish("keys", "rolled back"))
		return errors.New("roll back")
	})
	must(t, db.Update(func(tx *store.Tx) error {
		if err := tx.Put("n", "k", 1); err != nil {
			return err
		}
		return tx.Publish("keys", "rotated k2 ✓")
	}))
	for name, ch := range map[string]<-chan store.Notification{"publisher": here, "other": there} {
		select {
		case n := <-ch:
			if n.Payload != "rotated k2 ✓" || n.Gap {
				t.Errorf("%s received %+v", name, n)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s received nothing", name)
		}
	}
	select {
	case n := <-unrelated:
		t.Errorf("other channel received %+v", n)
	default:
	}
	if err := db.Publish(ctx, "bad\nchannel", "x"); err == nil {
		t.Error("a channel with a newline was accepted")
	}
	cancel()
	for _, ch := range []<-chan store.Notification{here, there, unrelated} {
		for range ch { // closed once ctx ends
		}
	}
}

// testSlowSubscriber: what is published once Subscribe returned arrives;
// a subscriber that does not read is never waited for: it finds a gap and
// then the latest messages.
func testSlowSubscriber(t *testing.T, open Opener) {
	db, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := db.Subscribe(ctx, "slow") // live once it returns
	must(t, db.Publish(ctx, "slow", "first"))
	select {
	case m := <-slow:
		if m.Payload != "first" {
			t.Fatalf("first message: %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a message published right after Subscribe was lost")
	}
	const n = 300
	for i := range n {
		must(t, db.Publish(ctx, "slow", fmt.Sprint(i)))
	}
	gap, last := false, ""
	for last != fmt.Sprint(n-1) {
		select {
		case m := <-slow:
			gap = gap || m.Gap
			if !m.Gap {
				last = m.Payload
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("stuck after %q", last)
		}
	}
	if !gap {
		t.Error("a subscriber that fell behind was not told of the gap")
	}
}

func drain(ch <-chan store.Notification) {
	for {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

func testCanceled(t *testing.T, open Opener) {
	db, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.UpdateContext(ctx, func(tx *store.Tx) error { return tx.Put("b", "k", 1) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled Update: %v", err)
	}
	must(t, db.ViewContext(context.Background(), func(tx *store.Tx) error {
		if tx.GetRaw("b", "k") != nil {
			t.Error("a canceled Update wrote")
		}
		if tx.Context() == nil {
			t.Error("no context")
		}
		return nil
	}))
}

// testBucketsAndSetSeq: a whole-store copy sees every bucket with its key
// count and sequence (also a bucket with a sequence and no keys), and a
// sequence it sets is where NextSeq goes on.
func testBucketsAndSetSeq(t *testing.T, open Opener) {
	db, _ := open(t)
	must(t, db.Update(func(tx *store.Tx) error {
		for _, k := range []string{"a", "b", "c"} {
			if err := tx.Put("bk_one", k, rec{Name: k}); err != nil {
				return err
			}
		}
		if err := tx.PutRaw("bk_two", "x", []byte("raw")); err != nil {
			return err
		}
		for range 5 {
			if _, err := tx.NextSeq("bk_seq"); err != nil {
				return err
			}
		}
		return nil
	}))
	var got []store.BucketInfo
	must(t, db.View(func(tx *store.Tx) (err error) {
		got, err = tx.Buckets()
		return err
	}))
	want := []store.BucketInfo{{Name: "bk_one", Keys: 3}, {Name: "bk_seq", Seq: 5}, {Name: "bk_two", Keys: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Buckets = %v, want %v", got, want)
	}
	var next uint64
	must(t, db.Update(func(tx *store.Tx) error {
		if err := tx.SetSeq("bk_other", 41); err != nil {
			return err
		}
		var err error
		next, err = tx.NextSeq("bk_other")
		return err
	}))
	if next != 42 {
		t.Fatalf("NextSeq after SetSeq(41) = %d, want 42", next)
	}
	must(t, db.View(func(tx *store.Tx) error {
		if err := tx.SetSeq("bk_other", 1); err != store.ErrReadOnly {
			t.Errorf("SetSeq in View: %v, want ErrReadOnly", err)
		}
		return nil
	}))
}
