package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
)

type ledgerEntry struct {
	User   string    `json:"user_id"`
	Amount int64     `json:"amount"`
	Ref    string    `json:"ref,omitempty"`
	At     time.Time `json:"created_at"`
}

var ledger = store.Declare("ledger", []store.Field[ledgerEntry]{
	store.Text("user_id", func(e *ledgerEntry) string { return e.User }),
	store.Int("amount", func(e *ledgerEntry) int64 { return e.Amount }),
	store.OptionalText("ref", func(e *ledgerEntry) string { return e.Ref }),
	store.Time("created_at", func(e *ledgerEntry) time.Time { return e.At }),
}, store.Index{Fields: []string{"user_id", "created_at"}, Sort: true}, store.Index{Fields: []string{"ref"}, Unique: true})

// TestTablesReadableWithSQL: a declared table is a real table an operator
// queries with psql: typed columns, the declared indexes, unique indexes
// as constraints, and its DDL in store_tables.
func TestTablesReadableWithSQL(t *testing.T) {
	t.Parallel()
	url := platformtest.Postgres(t)
	db := open(t, url)
	ctx := context.Background()
	if err := db.Declare(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 4, 5, 6, 7, 8, 9_123_456, time.UTC)
	err := db.Update(func(tx *store.Tx) error {
		if err := tx.Put("ledger", "e1", ledgerEntry{User: "u1", Amount: -250, Ref: "r1", At: at}); err != nil {
			return err
		}
		return tx.Put("ledger", "e2", ledgerEntry{User: "u1", Amount: 250, At: at.Add(time.Second)})
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var sum int64
	var first time.Time
	var refs int
	err = conn.QueryRow(ctx, `SELECT sum(amount), min(created_at), count(ref) FROM ledger WHERE user_id = 'u1'`).Scan(&sum, &first, &refs)
	if err != nil || sum != 0 || !first.Equal(at.Truncate(time.Microsecond)) || refs != 1 {
		t.Fatalf("SQL over the table: sum %d first %v refs %d: %v", sum, first, refs, err)
	}
	var email string
	if err := conn.QueryRow(ctx, `SELECT value->>'user_id' FROM ledger WHERE key = 'e1'`).Scan(&email); err != nil || email != "u1" {
		t.Fatalf("the record as jsonb: %q %v", email, err)
	}
	var idx, cons int
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'ledger' AND indexname = $1`, ledger.IndexName(0)).Scan(&idx)
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = $1 AND contype = 'u'`, ledger.IndexName(1)).Scan(&cons)
	if idx != 1 || cons != 1 {
		t.Fatalf("index %d, unique constraint %d", idx, cons)
	}
	var ddl string
	if err := conn.QueryRow(ctx, `SELECT ddl FROM store_tables WHERE name = 'ledger'`).Scan(&ddl); err != nil ||
		!strings.Contains(ddl, `"amount" bigint`) || !strings.Contains(ddl, "UNIQUE") {
		t.Fatalf("store_tables ddl: %q %v", ddl, err)
	}
	// The database's own constraint refuses a duplicate written by hand.
	if _, err := conn.Exec(ctx, `INSERT INTO ledger (key, value, ref) VALUES ('e3', '{}', 'r1')`); err == nil {
		t.Fatal("the unique constraint let a duplicate in")
	}
}

// TestMigratesAStoreOfTheKVLayout builds a database as a store without
// declared tables left it (migration 0001 only: every bucket in kv, the
// rows as its Put wrote them), then opens and declares: the bucket's rows
// move into the table with their columns, kv keeps the other buckets, and
// sequences stay.
func TestMigratesAStoreOfTheKVLayout(t *testing.T) {
	t.Parallel()
	url := platformtest.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE kv (bucket text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value jsonb, raw bytea,
    PRIMARY KEY (bucket, key), CHECK ((value IS NULL) <> (raw IS NULL)));
CREATE TABLE kv_seq (bucket text COLLATE "C" PRIMARY KEY, n bigint NOT NULL);
INSERT INTO schema_migrations (version, name) VALUES (1, '0001_kv.sql');
INSERT INTO kv (bucket, key, value) SELECT 'ledger', 'e' || lpad(i::text, 4, '0'),
    jsonb_build_object('user_id', 'u' || (i % 3), 'amount', i * 10, 'created_at', '2026-01-01T00:00:00.000001Z')
    FROM generate_series(1, 50) AS i;
INSERT INTO kv (bucket, key, raw) VALUES ('other', 'x', 'raw bytes');
INSERT INTO kv_seq (bucket, n) VALUES ('ledger', 50);`)
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, url)
	if err := db.Declare(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	page, err := db.Page(ctx, ledger, store.Query{Filters: []store.Filter{store.Where("user_id", store.Eq, "u1"),
		store.Where("amount", store.Gte, 100)}, Sort: []string{"user_id", "created_at"}})
	if err != nil || page.Total != 14 || page.Items[0].Key != "e0010" {
		t.Fatalf("page after migration: %d, %v (%+v)", page.Total, err, page.Items)
	}
	var inKV, inTable, sumCol int
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM kv WHERE bucket = 'ledger'`).Scan(&inKV)
	_ = conn.QueryRow(ctx, `SELECT count(*), sum(amount) FROM ledger`).Scan(&inTable, &sumCol)
	if inKV != 0 || inTable != 50 || sumCol != 12750 {
		t.Fatalf("after migration: kv %d, table %d rows summing %d", inKV, inTable, sumCol)
	}
	err = db.Update(func(tx *store.Tx) error {
		if string(tx.GetRaw("other", "x")) != "raw bytes" {
			t.Error("another bucket's row moved")
		}
		n, err := tx.NextSeq("ledger")
		if n != 51 {
			t.Errorf("sequence after migration: %d", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A second start finds nothing to do.
	db2 := open(t, url)
	if err := db2.Declare(ctx, ledger); err != nil {
		t.Fatal(err)
	}
}
