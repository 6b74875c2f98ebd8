package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// bbolt keeps a declared table in its bucket (key → record, as any
// bucket) and in buckets of its own, named with the internal prefix:
//
//	\x1f<table>\x1frow        key → the record's encoded field values
//	\x1f<table>\x1fi\x1f<idx> encoded index values + key → empty
//	\x1fstore_tables          table → fingerprint of its declaration
//
// An index entry carries the index's values and the key, so a Page
// evaluates conditions on them without reading the row; the row bucket
// answers the other fields. Declare rebuilds both whenever the
// declaration's fingerprint differs from the catalog's.

func rowBucket(t *Table) []byte { return t.rowBkt }

func indexBucket(t *Table, i int) []byte { return t.idxBkt[i] }

// rebuildBatch is how many records one transaction of a rebuild moves:
// a million-record table is rebuilt without holding all of it dirty.
const rebuildBatch = 20_000

// Declare brings each table's rows and indexes to its declaration: a
// table whose catalog fingerprint differs (or is missing) is rebuilt from
// its bucket, in batches; its catalog entry is written last, so a rebuild
// cut short is done again at the next start.
func (e *boltEngine) Declare(ctx context.Context, tables []*Table) error {
	var stale []*Table
	err := e.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(catalogBucket))
		for _, t := range tables {
			if c != nil && string(c.Get([]byte(t.Name))) == t.Fingerprint() {
				e.markCataloged(t)
				continue
			}
			stale = append(stale, t)
		}
		return nil
	})
	if err != nil || len(stale) == 0 {
		return err
	}
	// Tables with no records to move (a new file, a new table) are built
	// together in one transaction: a fresh file's start pays one commit's
	// syncs, not three per table.
	var built, rest []*Table
	err = e.db.Update(func(tx *bolt.Tx) error {
		built, rest = nil, nil
		for _, t := range stale {
			if prim := tx.Bucket([]byte(t.Name)); prim != nil {
				if k, _ := prim.Cursor().First(); k != nil {
					rest = append(rest, t)
					continue
				}
			}
			if err := resetBuckets(tx, t); err != nil {
				return err
			}
			if err := catalog(tx, t); err != nil {
				return err
			}
			built = append(built, t)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("declare tables: %w", err)
	}
	for _, t := range built {
		e.markCataloged(t)
	}
	for _, t := range rest {
		if err := e.rebuild(ctx, t); err != nil {
			return fmt.Errorf("declare table %s: %w", t.Name, err)
		}
	}
	return nil
}

func (e *boltEngine) markCataloged(t *Table) {
	e.mu.Lock()
	e.cataloged[t.Name] = true
	e.mu.Unlock()
}

// resetBuckets drops t's catalog entry and its own buckets and creates
// them empty.
func resetBuckets(tx *bolt.Tx, t *Table) error {
	if c := tx.Bucket([]byte(catalogBucket)); c != nil {
		if err := c.Delete([]byte(t.Name)); err != nil {
			return err
		}
	}
	var drop [][]byte
	own := []byte(internalPrefix + t.Name + internalPrefix)
	err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if bytes.HasPrefix(name, own) {
			drop = append(drop, bytes.Clone(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range drop {
		if err := tx.DeleteBucket(n); err != nil {
			return err
		}
	}
	if _, err := tx.CreateBucket(rowBucket(t)); err != nil {
		return err
	}
	for i := range t.Indexes {
		if _, err := tx.CreateBucket(indexBucket(t, i)); err != nil {
			return err
		}
	}
	return nil
}

// catalog records t's declaration as built.
func catalog(tx *bolt.Tx, t *Table) error {
	c, err := tx.CreateBucketIfNotExists([]byte(catalogBucket))
	if err != nil {
		return err
	}
	return c.Put([]byte(t.Name), []byte(t.Fingerprint()))
}

func (e *boltEngine) rebuild(ctx context.Context, t *Table) error {
	if err := e.db.Update(func(tx *bolt.Tx) error { return resetBuckets(tx, t) }); err != nil {
		return err
	}
	after := ""
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := e.db.Update(func(tx *bolt.Tx) error {
			prim := tx.Bucket([]byte(t.Name))
			if prim == nil {
				done = true
				return nil
			}
			bt := &boltTx{tx: tx, e: e}
			c := prim.Cursor()
			k, v := c.First()
			if after != "" {
				if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
					k, v = c.Next()
				}
			}
			type rec struct {
				key string
				raw []byte
			}
			var batch []rec
			for ; k != nil && len(batch) < rebuildBatch; k, v = c.Next() {
				batch = append(batch, rec{string(k), bytes.Clone(v)})
			}
			done = k == nil
			for _, r := range batch {
				row, err := t.decode(r.raw)
				if err == nil {
					err = t.checkRow(row)
				}
				if err != nil {
					return fmt.Errorf("record %q: %w", r.key, err)
				}
				if err := bt.writeRow(t, r.key, row); err != nil {
					return fmt.Errorf("record %q: %w", r.key, err)
				}
			}
			if len(batch) > 0 {
				after = batch[len(batch)-1].key
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	err := e.db.Update(func(tx *bolt.Tx) error { return catalog(tx, t) })
	if err == nil {
		e.markCataloged(t)
	}
	return err
}

// entry is index i's entry of a row: the index's values, then the key.
func (t *Table) entry(i int, row []val, key string) []byte {
	b := t.entryPrefix(i, row)
	return append(b, key...)
}

func (t *Table) entryPrefix(i int, row []val) []byte {
	var b []byte
	for _, f := range t.Indexes[i].Fields {
		p := t.pos[f]
		b = appendVal(b, t.Fields[p].Type, row[p])
	}
	return b
}

// decodeEntryView fills row's positions of index i from an entry and
// returns the key, copying nothing: text and key alias e (see
// decodeRowView).
func (t *Table) decodeEntryView(i int, e []byte, row []val) (string, error) {
	for _, f := range t.Indexes[i].Fields {
		p := t.pos[f]
		var err error
		if row[p], e, err = readValView(e, t.Fields[p].Type); err != nil {
			return "", err
		}
	}
	return unsafe.String(unsafe.SliceData(e), len(e)), nil
}

func (t *boltTx) tableBuckets(tb *Table) (rows *bolt.Bucket, idx []*bolt.Bucket, err error) {
	rows = t.tx.Bucket(rowBucket(tb))
	if rows == nil {
		return nil, nil, fmt.Errorf("table %s: %w", tb.Name, errNotBuilt)
	}
	idx = make([]*bolt.Bucket, len(tb.Indexes))
	for i := range tb.Indexes {
		if idx[i] = t.tx.Bucket(indexBucket(tb, i)); idx[i] == nil {
			return nil, nil, fmt.Errorf("table %s: %w", tb.Name, errNotBuilt)
		}
	}
	return rows, idx, nil
}

type notBuilt struct{}

func (notBuilt) Error() string { return "the table's rows and indexes are not built (DB.Declare)" }

var errNotBuilt = notBuilt{}

// writeRow replaces key's row and index entries with row's, checking the
// unique indexes first.
func (t *boltTx) writeRow(tb *Table, key string, row []val) error {
	rows, idx, err := t.tableBuckets(tb)
	if err != nil {
		return err
	}
	var old []val
	if raw := rows.Get([]byte(key)); raw != nil {
		if old, err = tb.decodeRow(raw); err != nil {
			return err
		}
	}
	for i, ix := range tb.Indexes {
		if !ix.Unique {
			continue
		}
		prefix := tb.entryPrefix(i, row)
		if hasNull(tb, ix, row) {
			continue
		}
		k, _ := idx[i].Cursor().Seek(prefix)
		if k != nil && bytes.HasPrefix(k, prefix) && string(k[len(prefix):]) != key {
			return &DuplicateError{Table: tb.Name, Index: tb.idxName[i], Fields: ix.Fields}
		}
	}
	t.writes++
	for i := range tb.Indexes {
		ne := tb.entry(i, row, key)
		if old != nil {
			oe := tb.entry(i, old, key)
			if bytes.Equal(oe, ne) {
				continue
			}
			if err := idx[i].Delete(oe); err != nil {
				return err
			}
		}
		if err := idx[i].Put(ne, []byte{}); err != nil {
			return err
		}
	}
	return rows.Put([]byte(key), tb.encodeRow(row))
}

func hasNull(tb *Table, ix Index, row []val) bool {
	return slices.ContainsFunc(ix.Fields, func(f string) bool { return row[tb.pos[f]].null })
}

func (t *boltTx) PutRow(tb *Table, key string, raw []byte, _ bool, row Row) error {
	if err := t.writeRow(tb, key, row.vals); err != nil {
		return err
	}
	b, err := t.bucket(tb.Name, true)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}

func (t *boltTx) DeleteRow(tb *Table, key string) error {
	rows, idx, err := t.tableBuckets(tb)
	if err != nil {
		return err
	}
	t.writes++
	if raw := rows.Get([]byte(key)); raw != nil {
		old, err := tb.decodeRow(raw)
		if err != nil {
			return err
		}
		for i := range tb.Indexes {
			if err := idx[i].Delete(tb.entry(i, old, key)); err != nil {
				return err
			}
		}
		if err := rows.Delete([]byte(key)); err != nil {
			return err
		}
	}
	if b := t.tx.Bucket([]byte(tb.Name)); b != nil {
		return b.Delete([]byte(key))
	}
	return nil
}

func (t *boltTx) DropBucket(bucket string) error {
	err := t.tx.DeleteBucket([]byte(bucket))
	if err == bolt.ErrBucketNotFound {
		return nil
	}
	t.writes++
	return err
}
