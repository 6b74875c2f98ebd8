package storetest_test

import (
	"fmt"
	"slices"
	"testing"

	"deckhand/platform/store"
	"deckhand/platform/store/storetest"
)

// BenchmarkEngines measures one read transaction, one read-modify-write
// transaction, 100 point reads (Get by Get, and one GetMany) and a
// 100-entry scan on both engines, side by side:
//
//	go test -run '^$' -bench Engines -benchtime 2s -count 5 ./platform/store/storetest/
func BenchmarkEngines(b *testing.B) {
	type rec struct {
		Email string `json:"email"`
		N     int    `json:"n"`
	}
	for _, e := range storetest.Engines() {
		db, _ := e.Open(b)
		err := db.Update(func(tx *store.Tx) error {
			for i := range 1000 {
				if err := tx.Put("users", fmt.Sprintf("u%04d", i), rec{Email: fmt.Sprintf("u%d@example.com", i)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("read/"+e.Name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				err := db.View(func(tx *store.Tx) error {
					var r rec
					if ok, err := tx.Get("users", fmt.Sprintf("u%04d", i%1000), &r); !ok || err != nil {
						return fmt.Errorf("get: %v %v", ok, err)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("write/"+e.Name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				key := fmt.Sprintf("u%04d", i%1000)
				err := db.Update(func(tx *store.Tx) error {
					var r rec
					if _, err := tx.Get("users", key, &r); err != nil {
						return err
					}
					r.N++
					return tx.Put("users", key, r)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		// 100 point reads in one transaction, one Get each against one
		// GetRawMany: on PostgreSQL 100 round trips against one.
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = fmt.Sprintf("u%04d", i*7)
		}
		b.Run("get100/"+e.Name, func(b *testing.B) {
			for b.Loop() {
				err := db.View(func(tx *store.Tx) error {
					for _, k := range keys {
						var r rec
						if ok, err := tx.Get("users", k, &r); !ok || err != nil {
							return fmt.Errorf("get %s: %v %v", k, ok, err)
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("getmany100/"+e.Name, func(b *testing.B) {
			for b.Loop() {
				err := db.View(func(tx *store.Tx) error {
					recs, err := store.GetMany[rec](tx, "users", keys)
					if err == nil && slices.Contains(recs, nil) {
						err = fmt.Errorf("a key is missing")
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("scan100/"+e.Name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				err := db.View(func(tx *store.Tx) error {
					return tx.Scan("users", store.ScanOptions{Prefix: "u0", Start: "u05", Limit: 100},
						func(string, []byte) error { n++; return nil })
				})
				if err != nil || n != 100 {
					b.Fatalf("scan: %d, %v", n, err)
				}
			}
		})
	}
}
