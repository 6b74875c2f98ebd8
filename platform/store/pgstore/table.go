package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"deckhand/platform/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A declared table is a PostgreSQL table of its own:
//
//	CREATE TABLE events (
//	    key   text COLLATE "C" PRIMARY KEY,
//	    value jsonb, raw bytea,               -- the record, as in kv
//	    event_type text COLLATE "C", created_at timestamptz, ...,
//	    CHECK ((value IS NULL) <> (raw IS NULL)));
//	CREATE INDEX events_container_id_idx ON events (container_id, key);
//	ALTER TABLE users ADD CONSTRAINT users_email_key UNIQUE (email);
//
// The DDL is generated from the declaration. store_tables records each
// table's declaration (and the DDL, for operators); Declare compares it
// under the migration lock and creates the table, adds and drops columns
// and indexes, recomputes the columns when fields changed, and moves the
// bucket's rows out of kv (a store written before the table existed),
// all in one transaction.

// loadCatalog reads the names of the tables the database holds.
func (e *engine) loadCatalog(ctx context.Context) error {
	rows, err := e.pool.Query(ctx, "SELECT name FROM store_tables")
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range names {
		e.cataloged[n] = true
	}
	return nil
}

func colType(t store.Type) string {
	switch t {
	case store.TypeInt:
		return "bigint"
	case store.TypeTime:
		return "timestamptz"
	}
	return `text COLLATE "C"`
}

// declaration is what store_tables keeps of a table.
type declaration struct {
	Fields  []store.FieldInfo `json:"fields"`
	Indexes []indexDecl       `json:"indexes"`
}

type indexDecl struct {
	Name    string   `json:"name"`
	Fields  []string `json:"fields"`
	Unique  bool     `json:"unique,omitempty"`
	Include []string `json:"include,omitempty"`
}

func declOf(t *store.Table) declaration {
	d := declaration{Fields: t.Fields, Indexes: []indexDecl{}}
	for i, ix := range t.Indexes {
		d.Indexes = append(d.Indexes, indexDecl{Name: t.IndexName(i), Fields: ix.Fields, Unique: ix.Unique, Include: ix.Include})
	}
	return d
}

func createIndex(table string, ix indexDecl) string {
	idents := func(fs []string) string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = ident(f)
		}
		return strings.Join(out, ", ")
	}
	include := ""
	if len(ix.Include) > 0 {
		include = " INCLUDE (" + idents(ix.Include) + ")"
	}
	if ix.Unique {
		return fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s UNIQUE (%s)%s", ident(table), ident(ix.Name), idents(ix.Fields), include)
	}
	return fmt.Sprintf("CREATE INDEX %s ON %s (%s, key)%s", ident(ix.Name), ident(table), idents(ix.Fields), include)
}

func dropIndex(table string, ix indexDecl) string {
	if ix.Unique {
		return fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s", ident(table), ident(ix.Name))
	}
	return fmt.Sprintf("DROP INDEX IF EXISTS %s", ident(ix.Name))
}

// ddl is the table's full DDL (what a fresh database runs).
func ddl(name string, d declaration) []string {
	cols := []string{`key text COLLATE "C" PRIMARY KEY`, "value jsonb", "raw bytea"}
	for _, f := range d.Fields {
		cols = append(cols, ident(f.Name)+" "+colType(f.Type))
	}
	cols = append(cols, "CHECK ((value IS NULL) <> (raw IS NULL))")
	out := []string{fmt.Sprintf("CREATE TABLE %s (\n    %s\n)", ident(name), strings.Join(cols, ",\n    "))}
	for _, ix := range d.Indexes {
		out = append(out, createIndex(name, ix))
	}
	return out
}

// recomputeBatch is how many rows one statement of a column
// recomputation updates.
const recomputeBatch = 5000

// Declare migrates each table to its declaration under the migration
// lock, one transaction per table.
func (e *engine) Declare(ctx context.Context, tables []*store.Table) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return classify(dbErr{err: err}, 1)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLock); err != nil {
		return classify(dbErr{err: err}, 1)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLock) }()
	for _, t := range tables {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return migrateTable(ctx, tx, t) })
		if err != nil {
			var dup *store.DuplicateError
			if errors.As(err, &dup) {
				return fmt.Errorf("declare table %s: the records already stored break the unique index: %w", t.Name, err)
			}
			return fmt.Errorf("declare table %s: %w", t.Name, err)
		}
		e.mu.Lock()
		e.cataloged[t.Name] = true
		e.mu.Unlock()
	}
	return nil
}

func migrateTable(ctx context.Context, tx pgx.Tx, t *store.Table) error {
	want := declOf(t)
	var fp string
	var oldJSON []byte
	err := tx.QueryRow(ctx, "SELECT fingerprint, declaration FROM store_tables WHERE name = $1", t.Name).Scan(&fp, &oldJSON)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var inKV bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM kv WHERE bucket = $1)", t.Name).Scan(&inKV); err != nil {
		return err
	}
	if exists && fp == t.Fingerprint() && !inKV {
		return nil
	}
	var stmts []string
	recompute := inKV
	var createAfter []indexDecl
	if !exists {
		all := ddl(t.Name, want)
		stmts = append(stmts, all[0])
		createAfter = want.Indexes // built once the rows are in
	} else {
		var old declaration
		if err := json.Unmarshal(oldJSON, &old); err != nil {
			return fmt.Errorf("store_tables declaration: %w", err)
		}
		for _, ix := range old.Indexes {
			if !slices.ContainsFunc(want.Indexes, func(x indexDecl) bool { return sameIndex(x, ix) }) {
				stmts = append(stmts, dropIndex(t.Name, ix))
			}
		}
		for _, f := range old.Fields {
			if !slices.Contains(want.Fields, f) {
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s", ident(t.Name), ident(f.Name)))
			}
		}
		for _, f := range want.Fields {
			if !slices.Contains(old.Fields, f) {
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", ident(t.Name), ident(f.Name), colType(f.Type)))
				recompute = true
			}
		}
		if !slices.Equal(old.Fields, want.Fields) {
			recompute = true
		}
		for _, ix := range want.Indexes {
			if !slices.ContainsFunc(old.Indexes, func(x indexDecl) bool { return sameIndex(x, ix) }) {
				createAfter = append(createAfter, ix)
			}
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	if inKV {
		// Rows a store kept before the table existed (or a copy wrote
		// without declaring it) move over; a key in both keeps kv's, the
		// later write.
		_, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (key, value, raw) SELECT key, value, raw FROM kv WHERE bucket = $1
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, raw = excluded.raw`, ident(t.Name)), t.Name)
		if err != nil {
			return fmt.Errorf("move the bucket's rows from kv: %w", err)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM kv WHERE bucket = $1", t.Name); err != nil {
			return err
		}
	}
	if recompute {
		if err := recomputeColumns(ctx, tx, t); err != nil {
			return err
		}
	}
	for _, ix := range createAfter {
		if _, err := tx.Exec(ctx, createIndex(t.Name, ix)); err != nil {
			var pg *pgconn.PgError
			if errors.As(err, &pg) && pg.Code == "23505" {
				return &store.DuplicateError{Table: t.Name, Index: ix.Name, Fields: ix.Fields}
			}
			return fmt.Errorf("%s: %w", createIndex(t.Name, ix), err)
		}
	}
	declJSON, _ := json.Marshal(want)
	_, err = tx.Exec(ctx, `INSERT INTO store_tables (name, fingerprint, declaration, ddl) VALUES ($1, $2, $3::text::jsonb, $4)
		ON CONFLICT (name) DO UPDATE SET fingerprint = excluded.fingerprint, declaration = excluded.declaration,
			ddl = excluded.ddl, migrated_at = now()`,
		t.Name, t.Fingerprint(), string(declJSON), strings.Join(ddl(t.Name, want), ";\n")+";")
	return err
}

func sameIndex(a, b indexDecl) bool {
	return a.Name == b.Name && a.Unique == b.Unique && slices.Equal(a.Fields, b.Fields) && slices.Equal(a.Include, b.Include)
}

// recomputeColumns derives every row's field columns from its record, in
// key order, one UPDATE per batch.
func recomputeColumns(ctx context.Context, tx pgx.Tx, t *store.Table) error {
	if len(t.Fields) == 0 {
		return nil
	}
	sets := make([]string, len(t.Fields))
	cols := []string{"key text"}
	casts := []string{"$1::text[]"}
	for i, f := range t.Fields {
		sets[i] = fmt.Sprintf("%s = u.c%d", ident(f.Name), i)
		base := strings.TrimSuffix(colType(f.Type), ` COLLATE "C"`)
		cols = append(cols, fmt.Sprintf("c%d %s", i, base))
		casts = append(casts, fmt.Sprintf("$%d::%s[]", i+2, base))
	}
	update := fmt.Sprintf("UPDATE %s AS t SET %s FROM unnest(%s) AS u(%s) WHERE t.key = u.key",
		ident(t.Name), strings.Join(sets, ", "), strings.Join(casts, ", "),
		strings.Join(func() []string {
			n := make([]string, len(cols))
			for i, c := range cols {
				n[i] = strings.Fields(c)[0]
			}
			return n
		}(), ", "))
	after := ""
	for {
		rows, err := tx.Query(ctx, fmt.Sprintf("SELECT key, %s FROM %s WHERE key > $1 ORDER BY key LIMIT %d", value, ident(t.Name), recomputeBatch), after)
		if err != nil {
			return err
		}
		type rec struct {
			key string
			raw []byte
		}
		batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rec, error) {
			var x rec
			err := r.Scan(&x.key, &x.raw)
			return x, err
		})
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		args := make([]any, len(t.Fields)+1)
		keys := make([]string, len(batch))
		colVals := make([][]any, len(t.Fields))
		for j, r := range batch {
			keys[j] = r.key
			vals, err := t.RowValues(r.raw)
			if err != nil {
				return fmt.Errorf("record %q: %w", r.key, err)
			}
			for i, v := range vals {
				colVals[i] = append(colVals[i], v)
			}
		}
		args[0] = keys
		for i, f := range t.Fields {
			args[i+1] = typedArray(f.Type, colVals[i])
		}
		if _, err := tx.Exec(ctx, update, args...); err != nil {
			var pg *pgconn.PgError
			if errors.As(err, &pg) && pg.Code == "23505" {
				return dupErr(t, pg)
			}
			return err
		}
		after = batch[len(batch)-1].key
	}
}

// typedArray is vs as a slice pgx encodes as the column type's array,
// nil elements as NULL.
func typedArray(ty store.Type, vs []any) any {
	switch ty {
	case store.TypeInt:
		return pointers[int64](vs)
	case store.TypeTime:
		return pointers[time.Time](vs)
	}
	return pointers[string](vs)
}

// pointers points at each of vs that is a T; the others are nil.
func pointers[T any](vs []any) []*T {
	out := make([]*T, len(vs))
	for i, v := range vs {
		if x, ok := v.(T); ok {
			out[i] = &x
		}
	}
	return out
}

// dupErr names the index a unique violation broke.
func dupErr(t *store.Table, pg *pgconn.PgError) error {
	for i, ix := range t.Indexes {
		if t.IndexName(i) == pg.ConstraintName {
			return &store.DuplicateError{Table: t.Name, Index: pg.ConstraintName, Fields: ix.Fields}
		}
	}
	return &store.DuplicateError{Table: t.Name, Index: pg.ConstraintName}
}

func (e *engine) sqlOf(t *store.Table) *tableSQL {
	e.mu.RLock()
	s := e.stmts[t]
	e.mu.RUnlock()
	if s != nil {
		return s
	}
	cols := []string{"key", "value", "raw"}
	var ph, sets []string
	sets = append(sets, "value = excluded.value", "raw = excluded.raw")
	for i, f := range t.Fields {
		cols = append(cols, ident(f.Name))
		ph = append(ph, fmt.Sprintf("$%d", i+3))
		sets = append(sets, fmt.Sprintf("%s = excluded.%s", ident(f.Name), ident(f.Name)))
	}
	up := func(record string) string {
		return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (key) DO UPDATE SET %s",
			ident(t.Name), strings.Join(cols, ", "), strings.Join(append([]string{"$1", record}, ph...), ", "), strings.Join(sets, ", "))
	}
	s = &tableSQL{upsertJSON: up("$2::text::jsonb, NULL"), upsertRaw: up("NULL, $2::bytea")}
	e.mu.Lock()
	e.stmts[t] = s
	e.mu.Unlock()
	return s
}

func (t *pgTx) PutRow(tb *store.Table, key string, raw []byte, isJSON bool, row store.Row) error {
	s := t.e.sqlOf(tb)
	args := make([]any, 0, 2+len(tb.Fields))
	q := s.upsertJSON
	if isJSON && !hasNULEscape(raw) {
		args = append(args, key, string(raw))
	} else {
		q = s.upsertRaw
		args = append(args, key, raw)
	}
	args = append(args, row.Values()...)
	t.p.exec(func(err error) error {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == "23505" {
			return dupErr(tb, pg)
		}
		return nil
	}, q, args...)
	return nil
}

func (t *pgTx) DeleteRow(tb *store.Table, key string) error {
	t.p.exec(nil, "DELETE FROM "+ident(tb.Name)+" WHERE key = $1", key)
	return nil
}

func (t *pgTx) DropBucket(bucket string) error {
	if t.e.isTable(bucket) {
		return fmt.Errorf("%s: %w", bucket, store.ErrUndeclared)
	}
	t.p.exec(nil, "DELETE FROM kv WHERE bucket = $1", bucket)
	t.p.exec(nil, "DELETE FROM kv_seq WHERE bucket = $1", bucket)
	return nil
}

// whereOf is p's conditions as SQL, adding their arguments with add.
func whereOf(p *store.Plan, add func(any) string) string {
	col := func(c *store.Cond) string {
		if c.Pos < 0 {
			return "key"
		}
		return ident(c.Field)
	}
	cond := func(c *store.Cond) string {
		x := col(c)
		switch c.Op {
		case store.Like:
			return x + " ILIKE " + add(c.Pattern)
		case store.In:
			var parts []string
			if len(c.Values) > 0 {
				parts = append(parts, x+" = ANY("+add(typedArray(c.Type, c.Values))+")")
			}
			if c.HasNull() {
				parts = append(parts, x+" IS NULL")
			}
			if len(parts) == 0 {
				return "false"
			}
			return "(" + strings.Join(parts, " OR ") + ")"
		}
		v := c.Values[0]
		if v == nil {
			if c.Op == store.Eq {
				return x + " IS NULL"
			}
			return x + " IS NOT NULL"
		}
		op := map[store.Op]string{store.Eq: "=", store.Ne: "IS DISTINCT FROM", store.Gt: ">", store.Gte: ">=", store.Lt: "<", store.Lte: "<="}[c.Op]
		return x + " " + op + " " + add(v)
	}
	where := []string{"true"}
	for i := range p.All {
		where = append(where, cond(&p.All[i]))
	}
	for _, g := range p.Any {
		var alts []string
		for i := range g {
			alts = append(alts, cond(&g[i]))
		}
		where = append(where, "("+strings.Join(alts, " OR ")+")")
	}
	return strings.Join(where, " AND ")
}

func adder(args *[]any) func(any) string {
	return func(v any) string {
		*args = append(*args, v)
		return fmt.Sprintf("$%d", len(*args))
	}
}

// CountBy is one GROUP BY statement.
func (t *pgTx) CountBy(p *store.Plan, field int) (map[string]int, error) {
	var args []any
	w := whereOf(p, adder(&args))
	f := p.Table.Fields[field]
	rows, err := t.p.Query(t.ctx, fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s AND %s IS NOT NULL GROUP BY 1",
		ident(f.Name), ident(p.Table.Name), w, ident(f.Name)), args...)
	if err != nil {
		return nil, dbErr{err: err}
	}
	out := map[string]int{}
	var v any
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&v, &n}, func() error {
		out[f.Type.GroupKey(v)] = int(n)
		return nil
	})
	if err != nil {
		return nil, dbErr{err: err}
	}
	return out, nil
}

// Page is one statement: the count of matches joined with the page,
// both over the same conditions, so the index that serves the filters
// serves both.
func (t *pgTx) Page(p *store.Plan) (store.PageResult, error) {
	var args []any
	add := adder(&args)
	w := whereOf(p, add)
	dir := ""
	if p.Desc {
		dir = " DESC"
	}
	var order, outer, sel []string
	for j, pos := range p.Sort {
		f := ident(p.Table.Fields[pos].Name)
		order = append(order, f+dir)
		sel = append(sel, fmt.Sprintf("%s AS o%d", f, j))
		outer = append(outer, fmt.Sprintf("p.o%d%s", j, dir))
	}
	order = append(order, "key"+dir)
	outer = append(outer, "p.key"+dir)
	pageW := w
	if p.After != nil {
		pageW += " AND " + t.afterCond(p, add)
	}
	selCols := "key, " + value + " AS v"
	if len(sel) > 0 {
		selCols += ", " + strings.Join(sel, ", ")
	}
	tbl := ident(p.Table.Name)
	count := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", tbl, w)
	if p.SkipTotal {
		count = "SELECT 0"
	}
	q := fmt.Sprintf(`SELECT c.n, p.key, p.v FROM (%s) AS c(n)
		LEFT JOIN LATERAL (SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %s OFFSET %s) AS p ON true
		ORDER BY %s`, count, selCols, tbl, pageW, strings.Join(order, ", "), add(p.Limit+1), add(p.Offset), strings.Join(outer, ", "))
	rows, err := t.p.Query(t.ctx, q, args...)
	if err != nil {
		return store.PageResult{}, dbErr{err: err}
	}
	var res store.PageResult
	var n int64
	var key *string
	var v []byte
	_, err = pgx.ForEachRow(rows, []any{&n, &key, &v}, func() error {
		res.Total = int(n)
		if key != nil {
			if v == nil {
				v = []byte{}
			}
			res.Items = append(res.Items, store.Item{Key: *key, Value: v})
			v = nil
		}
		return nil
	})
	if err != nil {
		return store.PageResult{}, dbErr{err: err}
	}
	if len(res.Items) > p.Limit {
		res.Items, res.More = res.Items[:p.Limit], true
	}
	return res, nil
}

// afterCond selects the rows after the cursor's position in the page's
// order: NULL sorts after every value ascending, first descending.
func (t *pgTx) afterCond(p *store.Plan, add func(any) string) string {
	var ors []string
	var eqs []string
	for j, pos := range p.Sort {
		f := ident(p.Table.Fields[pos].Name)
		v := p.After[j]
		var after string
		switch {
		case v == nil && !p.Desc:
			after = "false"
		case v == nil:
			after = f + " IS NOT NULL"
		case !p.Desc:
			after = "(" + f + " > " + add(v) + " OR " + f + " IS NULL)"
		default:
			after = f + " < " + add(v)
		}
		ors = append(ors, "("+strings.Join(append(slices.Clone(eqs), after), " AND ")+")")
		if v == nil {
			eqs = append(eqs, f+" IS NULL")
		} else {
			eqs = append(eqs, f+" = "+add(v))
		}
	}
	k := p.After[len(p.After)-1]
	op := " > "
	if p.Desc {
		op = " < "
	}
	ors = append(ors, "("+strings.Join(append(eqs, "key"+op+add(k)), " AND ")+")")
	return "(" + strings.Join(ors, " OR ") + ")"
}
