package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"deckhand/platform/lazyre"
)

// A bucket may be declared as a table: its record type, the fields the
// store derives from each record, and the indexes over those fields. The
// store then keeps every index in the same transaction as the record, on
// both engines, and Tx.Page lists the bucket by filters, sort and page.
//
// Fields are computed in Go from the record (a Put hands the value itself;
// a PutRaw or a migration decodes the JSON), so a field may be anything a
// function of the record yields: a nested value, a lower-cased text, an
// amount in cents. The record itself stays the bucket's value, so Get,
// Scan and every other key-value read see it unchanged.
//
// On bbolt a table keeps, beside the bucket, one bucket of encoded rows
// (key → field values) and one bucket per index (encoded values + key).
// On PostgreSQL a table is a real table: the key, the record in a jsonb
// column, one typed column per field (text, bigint, timestamptz) and one
// btree index per declared index; unique indexes are constraints. Both
// order the same way: text by bytes, NULL after every value.

// Type is a field's type.
type Type int

// Field types. Time values are kept to the microsecond (PostgreSQL's
// timestamptz precision) on both engines: a record's time and a filter's
// bound are truncated alike.
const (
	TypeText Type = iota + 1
	TypeInt
	TypeTime
)

func (t Type) String() string {
	switch t {
	case TypeText:
		return "text"
	case TypeInt:
		return "int"
	case TypeTime:
		return "time"
	}
	return "unknown"
}

// val is one field value of a row: text in s, int and time (Unix
// microseconds) in n.
type val struct {
	null bool
	s    string
	n    int64
}

var nullVal = val{null: true}

// Field is one derived field of records of type T: Text, Int and Time
// make them.
type Field[T any] struct {
	name string
	typ  Type
	get  func(*T) val
}

// Text declares a text field. Its values must be UTF-8 without NUL; an
// indexed one at most MaxKeyLen bytes.
func Text[T any](name string, get func(*T) string) Field[T] {
	return Field[T]{name: name, typ: TypeText, get: func(r *T) val { return val{s: get(r)} }}
}

// OptionalText declares a text field whose empty value is NULL: a unique
// index over it admits any number of records without one.
func OptionalText[T any](name string, get func(*T) string) Field[T] {
	return Field[T]{name: name, typ: TypeText, get: func(r *T) val {
		if s := get(r); s != "" {
			return val{s: s}
		}
		return nullVal
	}}
}

// Int declares an integer field (amounts in cents, counts, ratings).
func Int[T any](name string, get func(*T) int64) Field[T] {
	return Field[T]{name: name, typ: TypeInt, get: func(r *T) val { return val{n: get(r)} }}
}

// Time declares a time field; the zero time is NULL.
func Time[T any](name string, get func(*T) time.Time) Field[T] {
	return Field[T]{name: name, typ: TypeTime, get: func(r *T) val {
		t := get(r)
		if t.IsZero() {
			return nullVal
		}
		return val{n: micros(t)}
	}}
}

// micros is t in Unix microseconds, rounded down.
func micros(t time.Time) int64 {
	s, ns := t.Unix(), int64(t.Nanosecond())
	return s*1_000_000 + ns/1000
}

func fromMicros(n int64) time.Time { return time.UnixMicro(n).UTC() }

// Index declares an index over fields of a table. The record key is its
// implicit last column, so the entries of equal values are in key order.
type Index struct {
	// Fields are the indexed fields, in order (several: a composite index).
	Fields []string
	// Unique refuses a second record with the same values (records with a
	// NULL among them are exempt, as in SQL); a write that would break it
	// fails its transaction with ErrDuplicate.
	Unique bool
	// Sort lets Page order by the index's fields (or a leading part of
	// them); an ordered Page needs such an index.
	Sort bool
	// Include carries more fields in the index's entries without ordering
	// by them (PostgreSQL's INCLUDE): a condition on them and a count
	// over the index then need no table row (an index-only scan). bbolt
	// reads its compact rows for such conditions and ignores it.
	Include []string `json:",omitempty"`
}

// FieldInfo is a field's name and type.
type FieldInfo struct {
	Name string `json:"name"`
	Type Type   `json:"type"`
}

// Table is a declared bucket; Declare makes one and DB.Declare applies it.
type Table struct {
	Name    string
	Fields  []FieldInfo
	Indexes []Index

	pos     map[string]int
	rowOf   func(v any) ([]val, bool)
	decode  func(raw []byte) ([]val, error)
	idxName []string
	// The bbolt buckets of the rows and of each index, named once.
	rowBkt  []byte
	idxBkt  [][]byte
	nameBkt []byte // the bucket of the records themselves
}

// keyField is the pseudo-field naming the record key in filters and sorts.
const keyField = "key"

var identRE = lazyre.New(`^[a-z][a-z0-9_]{0,47}$`)

// reserved are names no table or field may take: the engines' own
// tables, and the key and value columns of every table.
var reserved = []string{"kv", "kv_seq", "schema_migrations", "store_tables", keyField, "value", "raw"}

// Declare describes bucket name as a table of records of type T. It
// panics on a malformed declaration (a programming error): a name that
// is not a lower-case identifier, a repeated or unknown field, an index
// without fields.
func Declare[T any](name string, fields []Field[T], indexes ...Index) *Table {
	t := &Table{Name: name, Indexes: indexes, pos: map[string]int{}}
	if err := checkIdent("table", name); err != nil {
		panic(err)
	}
	for i, f := range fields {
		if err := checkIdent("field", f.name); err != nil {
			panic(fmt.Errorf("table %s: %w", name, err))
		}
		if _, dup := t.pos[f.name]; dup {
			panic(fmt.Errorf("table %s: field %s declared twice", name, f.name))
		}
		t.pos[f.name] = i
		t.Fields = append(t.Fields, FieldInfo{Name: f.name, Type: f.typ})
	}
	for _, ix := range indexes {
		if len(ix.Fields) == 0 {
			panic(fmt.Errorf("table %s: an index needs fields", name))
		}
		for _, f := range append(slices.Clone(ix.Fields), ix.Include...) {
			if _, ok := t.pos[f]; !ok {
				panic(fmt.Errorf("table %s: index field %s is not a declared field", name, f))
			}
		}
		t.idxName = append(t.idxName, indexName(name, ix))
		t.idxBkt = append(t.idxBkt, []byte(internalPrefix+name+internalPrefix+"i"+internalPrefix+t.idxName[len(t.idxName)-1]))
	}
	t.rowBkt = []byte(internalPrefix + name + internalPrefix + "row")
	t.nameBkt = []byte(name)
	row := func(r *T) []val {
		out := make([]val, len(fields))
		for i, f := range fields {
			out[i] = f.get(r)
		}
		return out
	}
	t.rowOf = func(v any) ([]val, bool) {
		switch r := v.(type) {
		case *T:
			if r != nil {
				return row(r), true
			}
		case T:
			return row(&r), true
		}
		return nil, false
	}
	t.decode = func(raw []byte) ([]val, error) {
		r := new(T)
		if err := json.Unmarshal(raw, r); err != nil {
			return nil, fmt.Errorf("table %s: record is not a %T: %w", name, *r, err)
		}
		return row(r), nil
	}
	return t
}

func checkIdent(what, name string) error {
	if !identRE.MatchString(name) || slices.Contains(reserved, name) {
		return fmt.Errorf("%s name %q must be a lower-case identifier of at most 48 characters, not one of %v", what, name, reserved)
	}
	return nil
}

// indexName is the index's name on PostgreSQL (at most 63 bytes) and in
// bbolt's bucket names.
func indexName(table string, ix Index) string {
	suffix := "idx"
	if ix.Unique {
		suffix = "key"
	}
	n := table + "_" + strings.Join(ix.Fields, "_") + "_" + suffix
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(n))
		n = n[:50] + "_" + hex.EncodeToString(sum[:4]) + "_" + suffix[:1]
	}
	return n
}

// IndexName is the name of the table's i-th index (a PostgreSQL index or
// constraint).
func (t *Table) IndexName(i int) string { return t.idxName[i] }

// Field is the type of field name (false when it is neither a declared
// field nor "key").
func (t *Table) Field(name string) (Type, bool) {
	if name == keyField {
		return TypeText, true
	}
	i, ok := t.pos[name]
	if !ok {
		return 0, false
	}
	return t.Fields[i].Type, true
}

// Fingerprint identifies the declaration: an engine rebuilds a table's
// rows and indexes when it changes.
func (t *Table) Fingerprint() string {
	b, _ := json.Marshal(struct {
		F []FieldInfo
		I []Index
	}{t.Fields, t.Indexes})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// indexed reports whether field i is part of some index (its text values
// are then bounded by MaxKeyLen).
func (t *Table) indexed(i int) bool {
	return slices.ContainsFunc(t.Indexes, func(ix Index) bool { return slices.Contains(ix.Fields, t.Fields[i].Name) })
}

// ErrBadValue rejects a record whose field value the engines cannot
// store (text with NUL or invalid UTF-8, an indexed text over MaxKeyLen).
var ErrBadValue = errors.New("field value out of the store's contract")

// checkRow validates the derived values of a record.
func (t *Table) checkRow(row []val) error {
	for i, v := range row {
		if v.null || t.Fields[i].Type != TypeText {
			continue
		}
		if !utf8.ValidString(v.s) || strings.IndexByte(v.s, 0) >= 0 {
			return fmt.Errorf("table %s field %s: %w: must be UTF-8 without NUL", t.Name, t.Fields[i].Name, ErrBadValue)
		}
		if len(v.s) > MaxKeyLen && t.indexed(i) {
			return fmt.Errorf("table %s field %s: %w: an indexed text is at most %d bytes", t.Name, t.Fields[i].Name, ErrBadValue, MaxKeyLen)
		}
	}
	return nil
}

// row derives the field values of v (the value a Put was given, or its
// JSON).
func (t *Table) row(v any, raw []byte) ([]val, error) {
	row, ok := t.rowOf(v)
	if !ok {
		var err error
		if row, err = t.decode(raw); err != nil {
			return nil, err
		}
	}
	return row, t.checkRow(row)
}

// RowValues derives the field values of a record's JSON as Go values
// (string, int64, time.Time, nil for NULL), in the order of Fields: for
// engines and tools.
func (t *Table) RowValues(raw []byte) ([]any, error) {
	row, err := t.decode(raw)
	if err != nil {
		return nil, err
	}
	if err := t.checkRow(row); err != nil {
		return nil, err
	}
	return t.goValues(row), nil
}

func (t *Table) goValues(row []val) []any {
	out := make([]any, len(row))
	for i, v := range row {
		out[i] = t.Fields[i].Type.goValue(v)
	}
	return out
}

func (ty Type) goValue(v val) any {
	switch {
	case v.null:
		return nil
	case ty == TypeText:
		return v.s
	case ty == TypeTime:
		return fromMicros(v.n)
	}
	return v.n
}

// Order-preserving encoding of values (bbolt's index keys and rows, and
// cursors): a tag byte, 1 for a value and 2 for NULL so NULL sorts after
// every value; text is its bytes and a 0 terminator (text holds no NUL);
// int and time 8 big-endian bytes with the sign bit flipped.

func appendVal(b []byte, ty Type, v val) []byte {
	if v.null {
		return append(b, 2)
	}
	b = append(b, 1)
	if ty == TypeText {
		return append(append(b, v.s...), 0)
	}
	return binary.BigEndian.AppendUint64(b, uint64(v.n)^(1<<63))
}

var errEncoding = errors.New("malformed encoded value")

// readVal decodes one value from b and returns the rest.
func readVal(b []byte, ty Type) (val, []byte, error) {
	v, rest, err := readValView(b, ty)
	v.s = strings.Clone(v.s)
	return v, rest, err
}

// readValView is readVal without copying text: it aliases b.
func readValView(b []byte, ty Type) (val, []byte, error) {
	if len(b) == 0 {
		return val{}, nil, errEncoding
	}
	switch b[0] {
	case 2:
		return nullVal, b[1:], nil
	case 1:
	default:
		return val{}, nil, errEncoding
	}
	b = b[1:]
	if ty == TypeText {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return val{}, nil, errEncoding
		}
		return val{s: unsafe.String(unsafe.SliceData(b), i)}, b[i+1:], nil
	}
	if len(b) < 8 {
		return val{}, nil, errEncoding
	}
	return val{n: int64(binary.BigEndian.Uint64(b) ^ (1 << 63))}, b[8:], nil
}

// encodeRow is a row's values, encoded one after another.
func (t *Table) encodeRow(row []val) []byte {
	var b []byte
	for i, v := range row {
		b = appendVal(b, t.Fields[i].Type, v)
	}
	return b
}

// decodeRowView decodes b into row without copying text: the strings
// alias b, so they are valid only while b is (inside the bbolt
// transaction that read it); a Page's evaluation uses it and copies
// nothing it keeps beyond the transaction.
func (t *Table) decodeRowView(b []byte, row []val) error {
	for i := range row {
		if len(b) == 0 {
			return fmt.Errorf("table %s row: %w", t.Name, errEncoding)
		}
		switch {
		case b[0] == 2:
			row[i], b = nullVal, b[1:]
		case b[0] != 1:
			return fmt.Errorf("table %s row: %w", t.Name, errEncoding)
		case t.Fields[i].Type == TypeText:
			j := bytes.IndexByte(b[1:], 0)
			if j < 0 {
				return fmt.Errorf("table %s row: %w", t.Name, errEncoding)
			}
			row[i] = val{s: unsafe.String(unsafe.SliceData(b[1:]), j)}
			if j == 0 {
				row[i] = val{}
			}
			b = b[2+j:]
		default:
			if len(b) < 9 {
				return fmt.Errorf("table %s row: %w", t.Name, errEncoding)
			}
			row[i], b = val{n: int64(binary.BigEndian.Uint64(b[1:]) ^ (1 << 63))}, b[9:]
		}
	}
	return nil
}

func (t *Table) decodeRow(b []byte) ([]val, error) {
	row := make([]val, len(t.Fields))
	for i := range row {
		var err error
		if row[i], b, err = readVal(b, t.Fields[i].Type); err != nil {
			return nil, fmt.Errorf("table %s row: %w", t.Name, err)
		}
	}
	return row, nil
}

// compareVal orders two values of one type: NULL after every value.
func compareVal(ty Type, a, b val) int {
	switch {
	case a.null && b.null:
		return 0
	case a.null:
		return 1
	case b.null:
		return -1
	case ty == TypeText:
		return strings.Compare(a.s, b.s)
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}
