package pgstore

import (
	"fmt"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
)

// pageSize is how many rows a scan reads per query; the function sees
// one page at a time, so it may run statements of its own in between.
const pageSize = 256

// notifyChannel is the one PostgreSQL channel every store channel travels
// on, as "channel\npayload", so the listener LISTENs once.
const notifyChannel = "deckhand_store"

// src is where bucket's entries live: its table, or the kv rows of the
// bucket (with the bucket as the first argument). Conditions follow as
// " AND ...", numbered after args.
func (t *pgTx) src(bucket string) (string, []any) {
	if t.e.isTable(bucket) {
		return pgx.Identifier{bucket}.Sanitize() + " WHERE true", nil
	}
	return "kv WHERE bucket = $1", []any{bucket}
}

func arg(args []any, v any) ([]any, string) {
	args = append(args, v)
	return args, fmt.Sprintf("$%d", len(args))
}

func (t *pgTx) Get(bucket, key string) ([]byte, error) { return t.get(bucket, key, "") }

// GetForUpdate reads and locks the row until the transaction ends
// (SELECT ... FOR UPDATE); a missing row locks nothing.
func (t *pgTx) GetForUpdate(bucket, key string) ([]byte, error) {
	return t.get(bucket, key, " FOR UPDATE")
}

func (t *pgTx) get(bucket, key, lock string) ([]byte, error) {
	var raw []byte
	from, args := t.src(bucket)
	args, k := arg(args, key)
	err := t.p.QueryRow(t.ctx, "SELECT "+value+" FROM "+from+" AND key = "+k+lock, args...).Scan(&raw)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr{err: err}
	}
	if raw == nil {
		raw = []byte{}
	}
	return raw, nil
}

// GetMany reads every key in one statement. The key column's "C"
// collation is the primary key's, so = ANY probes the index once per
// distinct key; rows come back in no particular order and are placed by
// key (repeated keys share one value).
func (t *pgTx) GetMany(bucket string, keys []string) ([][]byte, error) {
	distinct := make([]string, 0, len(keys))
	found := make(map[string][]byte, len(keys))
	for _, k := range keys {
		if _, dup := found[k]; !dup {
			found[k] = nil
			distinct = append(distinct, k)
		}
	}
	from, args := t.src(bucket)
	args, ks := arg(args, distinct)
	rows, err := t.p.Query(t.ctx, "SELECT key, "+value+" FROM "+from+" AND key = ANY("+ks+"::text[])", args...)
	if err != nil {
		return nil, dbErr{err: err}
	}
	var k string
	var raw []byte
	_, err = pgx.ForEachRow(rows, []any{&k, &raw}, func() error {
		if raw == nil {
			raw = []byte{}
		}
		found[k] = raw
		raw = nil // the next row gets a slice of its own
		return nil
	})
	if err != nil {
		return nil, dbErr{err: err}
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
}

func (t *pgTx) Put(bucket, key string, raw []byte, isJSON bool) error {
	if t.e.isTable(bucket) {
		return fmt.Errorf("%s: %w", bucket, store.ErrUndeclared)
	}
	if isJSON && !hasNULEscape(raw) {
		t.p.exec(nil, `INSERT INTO kv (bucket, key, value) VALUES ($1, $2, $3::text::jsonb)
			ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value, raw = NULL`, bucket, key, string(raw))
	} else {
		t.p.exec(nil, `INSERT INTO kv (bucket, key, raw) VALUES ($1, $2, $3)
			ON CONFLICT (bucket, key) DO UPDATE SET raw = excluded.raw, value = NULL`, bucket, key, raw)
	}
	return nil
}

func (t *pgTx) Delete(bucket, key string) error {
	if t.e.isTable(bucket) {
		return fmt.Errorf("%s: %w", bucket, store.ErrUndeclared)
	}
	t.p.exec(nil, "DELETE FROM kv WHERE bucket = $1 AND key = $2", bucket, key)
	return nil
}

func (t *pgTx) NextSeq(bucket string) (uint64, error) {
	var n int64
	err := t.p.QueryRow(t.ctx, `INSERT INTO kv_seq (bucket, n) VALUES ($1, 1)
		ON CONFLICT (bucket) DO UPDATE SET n = kv_seq.n + 1 RETURNING n`, bucket).Scan(&n)
	if err != nil {
		return 0, dbErr{err: err}
	}
	return uint64(n), nil
}

func (t *pgTx) Count(bucket, prefix string) (int, error) {
	from, args := t.src(bucket)
	q := "SELECT count(*) FROM " + from
	if prefix != "" {
		var p string
		args, p = arg(args, prefix)
		q += " AND key >= " + p
		if end, ok := store.PrefixEnd(prefix); ok {
			args, p = arg(args, end)
			q += " AND key < " + p
		}
	}
	var n int
	if err := t.p.QueryRow(t.ctx, q, args...).Scan(&n); err != nil {
		return 0, dbErr{err: err}
	}
	return n, nil
}

func (t *pgTx) Notify(channel, payload string) error {
	t.p.exec(nil, "SELECT pg_notify($1, $2)", notifyChannel, channel+"\n"+payload)
	return nil
}

// bound is one side of a key range.
type bound struct {
	key       string
	inclusive bool
	set       bool
}

// scanRange is the key range o selects within its prefix.
func scanRange(o store.ScanOptions) (lo, hi bound) {
	if o.Prefix != "" {
		lo = bound{o.Prefix, true, true}
	}
	if end, ok := store.PrefixEnd(o.Prefix); ok {
		hi = bound{end, false, true}
	}
	if o.Start == "" {
		return lo, hi
	}
	start := bound{o.Start, !o.Exclusive, true}
	if !o.Reverse && (!lo.set || o.Start >= lo.key) {
		lo = start
	}
	if o.Reverse && (!hi.set || o.Start < hi.key) {
		hi = start
	}
	return lo, hi
}

func (t *pgTx) Scan(bucket string, o store.ScanOptions, fn func(string, []byte) error) error {
	lo, hi := scanRange(o)
	seen := 0
	for {
		from, args := t.src(bucket)
		q := "SELECT key, " + value + " FROM " + from
		if lo.set {
			args = append(args, lo.key)
			q += fmt.Sprintf(" AND key %s $%d", map[bool]string{true: ">=", false: ">"}[lo.inclusive], len(args))
		}
		if hi.set {
			args = append(args, hi.key)
			q += fmt.Sprintf(" AND key %s $%d", map[bool]string{true: "<=", false: "<"}[hi.inclusive], len(args))
		}
		q += map[bool]string{false: " ORDER BY key", true: " ORDER BY key DESC"}[o.Reverse]
		n := pageSize
		if o.Limit > 0 && o.Limit-seen < n {
			n = o.Limit - seen
		}
		args = append(args, n)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
		rows, err := t.p.Query(t.ctx, q, args...)
		if err != nil {
			return dbErr{err: err}
		}
		type kv struct {
			k string
			v []byte
		}
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv, error) {
			var e kv
			err := r.Scan(&e.k, &e.v)
			if e.v == nil {
				e.v = []byte{}
			}
			return e, err
		})
		if err != nil {
			return dbErr{err: err}
		}
		for _, e := range page {
			if err := fn(e.k, e.v); err != nil {
				if err == store.ErrStop {
					return nil
				}
				return err
			}
		}
		seen += len(page)
		if len(page) < n || (o.Limit > 0 && seen >= o.Limit) {
			return nil
		}
		last := page[len(page)-1].k
		if o.Reverse {
			hi = bound{last, false, true}
		} else {
			lo = bound{last, false, true}
		}
	}
}

// Buckets counts kv's buckets and every table's rows, with sequences.
func (t *pgTx) Buckets() ([]store.BucketInfo, error) {
	counts := "SELECT bucket, count(*) AS n FROM kv GROUP BY bucket"
	for _, name := range t.e.tableNames() {
		// A table without rows is no bucket (as a kv bucket without keys).
		counts += fmt.Sprintf(" UNION ALL (SELECT %s, count(*) FROM %s HAVING count(*) > 0)", quoteLit(name), pgx.Identifier{name}.Sanitize())
	}
	rows, err := t.p.Query(t.ctx, `SELECT bucket, COALESCE(sum(k.n), 0)::bigint, COALESCE(max(s.n), 0)
		FROM (`+counts+`) k
		FULL OUTER JOIN kv_seq s USING (bucket) GROUP BY bucket ORDER BY bucket`)
	if err != nil {
		return nil, dbErr{err: err}
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.BucketInfo, error) {
		var b store.BucketInfo
		var seq, keys int64
		err := r.Scan(&b.Name, &keys, &seq)
		b.Keys = int(keys)
		b.Seq = uint64(seq)
		return b, err
	})
	if err != nil {
		return nil, dbErr{err: err}
	}
	return out, nil
}

func (t *pgTx) SetSeq(bucket string, n uint64) error {
	if n == 0 {
		t.p.exec(nil, "DELETE FROM kv_seq WHERE bucket = $1", bucket)
	} else {
		t.p.exec(nil, `INSERT INTO kv_seq (bucket, n) VALUES ($1, $2)
			ON CONFLICT (bucket) DO UPDATE SET n = excluded.n`, bucket, int64(n))
	}
	return nil
}
