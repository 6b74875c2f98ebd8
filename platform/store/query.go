package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Op is a filter operator.
type Op string

// The filter operators. Comparisons follow SQL on both engines: a NULL
// field fails eq, gt, gte, lt, lte and like with a value, and passes ne
// (IS DISTINCT FROM); eq nil is IS NULL, ne nil IS NOT NULL. like takes
// SQL wildcards (% any run, _ one character, \ escapes the next) and
// ignores the case of ASCII letters; in takes a slice of values (nil
// among them matches NULL).
const (
	Eq   Op = "eq"
	Ne   Op = "ne"
	Gt   Op = "gt"
	Gte  Op = "gte"
	Lt   Op = "lt"
	Lte  Op = "lte"
	Like Op = "like"
	In   Op = "in"
)

// Ops is every operator, in the order documentation lists them.
var Ops = []Op{Eq, Ne, Gt, Gte, Lt, Lte, Like, In}

// MaxInValues bounds the values of one in filter.
const MaxInValues = 1000

// Filter is one condition on a declared field or on "key" (the record
// key, text). With Any set it is instead the disjunction of Any's
// conditions (each a plain condition).
type Filter struct {
	Field string
	Op    Op
	// Value is a string (text), an integer (int), a time.Time (time) or
	// nil (NULL); for In a slice of those.
	Value any
	Any   []Filter
}

// Where is the condition field op value.
func Where(field string, op Op, value any) Filter { return Filter{Field: field, Op: op, Value: value} }

// KeyPrefix is the conditions on the key that select the keys starting
// with p (none for an empty p): a range, so an engine seeks to it.
func KeyPrefix(p string) []Filter {
	if p == "" {
		return nil
	}
	fs := []Filter{Where(keyField, Gte, p)}
	// The least string above every one starting with p: p with its last
	// rune raised by one (UTF-8's byte order is code point order); a rune
	// that cannot be raised is dropped and the one before it raised.
	for end := p; end != ""; {
		r, n := utf8.DecodeLastRuneInString(end)
		end = end[:len(end)-n]
		switch {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF: // the next code point is past the surrogates
			r = 0xE000
		default:
			r++
		}
		return append(fs, Where(keyField, Lt, end+string(r)))
	}
	return fs
}

// AnyOf holds when one of fs holds.
func AnyOf(fs ...Filter) Filter { return Filter{Any: fs} }

// Query selects a page of a table.
type Query struct {
	// Filters all hold for every record of the page.
	Filters []Filter
	// Sort orders by these fields, then by key; empty orders by key
	// alone. The fields are a leading part of an index declared Sort, or
	// follow index fields the filters fix by eq or in (an index over
	// user_id, created_at sorts one user's records by created_at).
	Sort []string
	// Desc reverses the whole order (the key included).
	Desc bool
	// Limit caps the page (0: every match, up to MaxPage).
	Limit int
	// Offset skips that many matches; Cursor instead resumes after the
	// record a previous page's Next named. Not both.
	Offset int
	Cursor string
	// SkipTotal leaves RawPage.Total 0: a page without its count (a batch
	// of a deletion), which needs not visit every match.
	SkipTotal bool
}

// MaxPage bounds what one page holds.
const MaxPage = 100_000

// Item is one record of a page: its key and stored bytes.
type Item struct {
	Key   string
	Value []byte
}

// RawPage is a page of records as stored.
type RawPage struct {
	Items []Item
	// Total is how many records pass the filters (every page, not this one).
	Total int
	// Next resumes after this page's last record ("" when none follows).
	Next string
}

// Page is a page of decoded records.
type Page[T any] struct {
	Items []T
	Keys  []string
	Total int
	Next  string
}

// QueryError rejects a query: Field names the filter's field (or sort,
// limit, offset, cursor) and Rule what it broke. The platform answers it
// 400 INVALID naming the field.
type QueryError struct {
	Field string
	Rule  string
}

func (e *QueryError) Error() string { return e.Field + ": " + e.Rule }

// InvalidField names the field and the rule it broke (the error kernel
// answers 400 naming them).
func (e *QueryError) InvalidField() (field, rule string) { return e.Field, e.Rule }

func qerr(field, rule string, args ...any) *QueryError {
	return &QueryError{Field: field, Rule: fmt.Sprintf(rule, args...)}
}

// Cond is one validated condition.
type Cond struct {
	Field string
	// Pos is the field's position in Table.Fields (-1: the key).
	Pos  int
	Type Type
	Op   Op
	// Values are Go values (string, int64, time.Time in UTC to the
	// microsecond, nil for NULL): one for comparisons, the set for In.
	Values []any
	// Pattern is a like's pattern as given.
	Pattern string

	vals    []val
	hasNull bool
	like    []likeTok
}

// HasNull reports whether an In condition's values include NULL (Values
// holds the others).
func (c *Cond) HasNull() bool { return c.hasNull }

// Plan is a validated query, handed to the engine.
type Plan struct {
	Table *Table
	// All hold, and of each Any group at least one condition holds.
	All []Cond
	Any [][]Cond
	// Sort holds the sort fields' positions in Table.Fields.
	Sort      []int
	Desc      bool
	Limit     int
	Offset    int
	SkipTotal bool
	// After is the cursor's position: the sort fields' values (Go values)
	// then the key; nil without a cursor.
	After []any

	after    []val
	afterKey string
}

// compile validates q against t.
func compile(t *Table, q Query) (*Plan, error) {
	p := &Plan{Table: t, Desc: q.Desc, Limit: q.Limit, Offset: q.Offset, SkipTotal: q.SkipTotal}
	switch {
	case q.Limit < 0 || q.Limit > MaxPage:
		return nil, qerr("limit", "must be from 0 to %d, got %d", MaxPage, q.Limit)
	case q.Offset < 0:
		return nil, qerr("offset", "must be 0 or more, got %d", q.Offset)
	case q.Offset > 0 && q.Cursor != "":
		return nil, qerr("cursor", "give an offset or a cursor, not both")
	}
	p.Limit = cmp.Or(p.Limit, MaxPage)
	for _, f := range q.Filters {
		if f.Any == nil {
			c, err := compileCond(t, f)
			if err != nil {
				return nil, err
			}
			p.All = append(p.All, c)
			continue
		}
		if f.Field != "" || f.Op != "" {
			return nil, qerr(f.Field, "a filter is a condition or a group of alternatives, not both")
		}
		var group []Cond
		for _, g := range f.Any {
			if g.Any != nil {
				return nil, qerr(g.Field, "alternatives do not nest")
			}
			c, err := compileCond(t, g)
			if err != nil {
				return nil, err
			}
			group = append(group, c)
		}
		if len(group) == 0 {
			return nil, qerr("filter", "a group of alternatives needs at least one")
		}
		p.Any = append(p.Any, group)
	}
	if len(q.Sort) > 0 {
		fixed := map[string]bool{}
		for _, c := range p.All {
			if c.Op == Eq || c.Op == In {
				fixed[c.Field] = true
			}
		}
		if !t.sortable(q.Sort, fixed) {
			return nil, qerr("sort", "cannot sort by %s; sortable: %s", strings.Join(q.Sort, ", "), t.sortables())
		}
		for _, f := range q.Sort {
			p.Sort = append(p.Sort, t.pos[f])
		}
	}
	if q.Cursor != "" {
		if err := p.decodeCursor(q.Cursor); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// sortable reports whether sort is a leading part of a Sort index once
// the index's first fields that fixed (eq, in) leaves out are skipped: an
// index over (user_id, created_at) sorts one user's records by created_at.
func (t *Table) sortable(sort []string, fixed map[string]bool) bool {
	for _, ix := range t.Indexes {
		if !ix.Sort {
			continue
		}
		for k := 0; k <= len(ix.Fields); k++ {
			rest := ix.Fields[k:]
			if len(sort) <= len(rest) && slices.Equal(rest[:len(sort)], sort) {
				return true
			}
			if k == len(ix.Fields) || !fixed[ix.Fields[k]] {
				break
			}
		}
	}
	return false
}

func (t *Table) sortables() string {
	var out []string
	for _, ix := range t.Indexes {
		if ix.Sort {
			for i := range ix.Fields {
				s := strings.Join(ix.Fields[:i+1], ", ")
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		return "key only"
	}
	return strings.Join(out, "; ") + " (or what follows fields the filters fix with eq or in)"
}

func (t *Table) fieldNames() string {
	names := []string{keyField}
	for _, f := range t.Fields {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func compileCond(t *Table, f Filter) (Cond, error) {
	ty, ok := t.Field(f.Field)
	if !ok {
		return Cond{}, qerr(f.Field, "is not a field of %s; fields: %s", t.Name, t.fieldNames())
	}
	c := Cond{Field: f.Field, Pos: -1, Type: ty, Op: f.Op}
	if f.Field != keyField {
		c.Pos = t.pos[f.Field]
	}
	switch f.Op {
	case Eq, Ne, Gt, Gte, Lt, Lte:
		v, err := toVal(f.Field, ty, f.Value)
		if err != nil {
			return c, err
		}
		if v.null && f.Op != Eq && f.Op != Ne {
			return c, qerr(f.Field, "%s needs a value, not null", f.Op)
		}
		c.vals = []val{v}
		if ty == TypeText && !v.null {
			c.Values = []any{f.Value} // the string as given is its Go value
			return c, nil
		}
	case Like:
		if ty != TypeText {
			return c, qerr(f.Field, "like applies to text fields; %s is %s", f.Field, ty)
		}
		s, ok := f.Value.(string)
		if !ok {
			return c, qerr(f.Field, "like needs a string pattern (%% any run, _ one character)")
		}
		toks, err := parseLike(s)
		if err != nil {
			return c, qerr(f.Field, "%s", err)
		}
		c.Pattern, c.like = s, toks
	case In:
		rv := reflect.ValueOf(f.Value)
		if f.Value == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
			return c, qerr(f.Field, "in needs a list of values")
		}
		if rv.Len() > MaxInValues {
			return c, qerr(f.Field, "in takes at most %d values, got %d", MaxInValues, rv.Len())
		}
		for i := range rv.Len() {
			v, err := toVal(f.Field, ty, rv.Index(i).Interface())
			if err != nil {
				return c, err
			}
			if v.null {
				c.hasNull = true
				continue
			}
			c.vals = append(c.vals, v)
		}
	default:
		return c, qerr(f.Field, "unknown operator %q; operators: %s", f.Op, opNames())
	}
	for _, v := range c.vals {
		c.Values = append(c.Values, ty.goValue(v))
	}
	return c, nil
}

func opNames() string {
	s := make([]string, len(Ops))
	for i, o := range Ops {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// toVal converts a filter value to field type ty.
func toVal(field string, ty Type, v any) (val, error) {
	if v == nil {
		return nullVal, nil
	}
	switch ty {
	case TypeText:
		s, ok := v.(string)
		if !ok {
			return val{}, qerr(field, "must be a string")
		}
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return val{}, qerr(field, "must be UTF-8 without NUL")
		}
		return val{s: s}, nil
	case TypeTime:
		t, ok := v.(time.Time)
		if !ok {
			return val{}, qerr(field, "must be a time")
		}
		if t.IsZero() {
			return nullVal, nil
		}
		return val{n: micros(t)}, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return val{n: rv.Int()}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > math.MaxInt64 {
			return val{}, qerr(field, "is out of range")
		}
		return val{n: int64(rv.Uint())}, nil
	}
	return val{}, qerr(field, "must be an integer")
}

// like patterns

type likeTok struct {
	any  bool // %
	one  bool // _
	lit  rune
	fold bool // lit is an ASCII letter: match either case
}

func parseLike(p string) ([]likeTok, error) {
	if !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0 {
		return nil, errors.New("like pattern must be UTF-8 without NUL")
	}
	var out []likeTok
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '%':
			if len(out) == 0 || !out[len(out)-1].any {
				out = append(out, likeTok{any: true})
			}
			continue
		case '_':
			out = append(out, likeTok{one: true})
			continue
		case '\\':
			if i+1 == len(rs) {
				return nil, errors.New(`like pattern must not end with an escape (\)`)
			}
			i++
			r = rs[i]
		}
		out = append(out, likeTok{lit: lowerASCII(r), fold: isASCIILetter(r)})
	}
	return out, nil
}

func isASCIILetter(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }

func lowerASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// likeMatch matches s against toks: % backtracks to its last position
// (the classic wildcard walk, linear for patterns with one %), over the
// string's bytes, a rune at a time, without copying it.
func likeMatch(toks []likeTok, s string) bool {
	ti, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		r, n := rune(s[si]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[si:])
		}
		if ti < len(toks) && !toks[ti].any && (toks[ti].one || tokEq(toks[ti], r)) {
			ti++
			si += n
			continue
		}
		if ti < len(toks) && toks[ti].any {
			star, mark = ti, si
			ti++
			continue
		}
		if star >= 0 {
			ti = star + 1
			_, m := utf8.DecodeRuneInString(s[mark:])
			mark += m
			si = mark
			continue
		}
		return false
	}
	for ti < len(toks) && toks[ti].any {
		ti++
	}
	return ti == len(toks)
}

func tokEq(t likeTok, r rune) bool {
	if t.fold {
		return lowerASCII(r) == t.lit
	}
	return r == t.lit
}

// holds evaluates c on a row (key is the record key).
func (c *Cond) holds(row []val, key string) bool {
	v := val{s: key}
	if c.Pos >= 0 {
		v = row[c.Pos]
	}
	switch c.Op {
	case Like:
		return !v.null && likeMatch(c.like, v.s)
	case In:
		if v.null {
			return c.hasNull
		}
		return slices.ContainsFunc(c.vals, func(w val) bool { return compareVal(c.Type, v, w) == 0 })
	}
	w := c.vals[0]
	if w.null {
		return (c.Op == Eq) == v.null
	}
	if v.null {
		return c.Op == Ne
	}
	r := compareVal(c.Type, v, w)
	switch c.Op {
	case Eq:
		return r == 0
	case Ne:
		return r != 0
	case Gt:
		return r > 0
	case Gte:
		return r >= 0
	case Lt:
		return r < 0
	}
	return r <= 0
}

// compareAt orders two rows by p's sort fields then key, ascending.
func (p *Plan) compareAt(a []val, ak string, b []val, bk string) int {
	for _, i := range p.Sort {
		if c := compareVal(p.Table.Fields[i].Type, a[i], b[i]); c != 0 {
			return c
		}
	}
	return strings.Compare(ak, bk)
}

// pastCursor reports whether a row comes after the cursor in p's order.
func (p *Plan) pastCursor(row []val, key string) bool {
	if p.After == nil {
		return true
	}
	c := 0
	for j, i := range p.Sort {
		if c = compareVal(p.Table.Fields[i].Type, row[i], p.after[j]); c != 0 {
			break
		}
	}
	if c == 0 {
		c = strings.Compare(key, p.afterKey)
	}
	if p.Desc {
		return c < 0
	}
	return c > 0
}

// Cursors: base64url of a version byte, a digest of the table and order
// (a cursor of another list is refused), the sort values and the key.

func (p *Plan) orderDigest() []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v\x00%v", p.Table.Name, p.Sort, p.Desc)
	return h.Sum(nil)[:6]
}

// cursorAt is the cursor that resumes after the record (key, raw).
func (p *Plan) cursorAt(key string, raw []byte) (string, error) {
	row, err := p.Table.decode(raw)
	if err != nil {
		return "", err
	}
	b := append([]byte{1}, p.orderDigest()...)
	for _, i := range p.Sort {
		b = appendVal(b, p.Table.Fields[i].Type, row[i])
	}
	b = append(b, key...)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (p *Plan) decodeCursor(s string) error {
	bad := qerr("cursor", "is not a cursor of this list (use the next cursor a page returned)")
	b, err := base64.RawURLEncoding.DecodeString(s)
	d := p.orderDigest()
	if err != nil || len(b) < 1+len(d) || b[0] != 1 || string(b[1:1+len(d)]) != string(d) {
		return bad
	}
	b = b[1+len(d):]
	p.after = make([]val, len(p.Sort))
	p.After = make([]any, 0, len(p.Sort)+1)
	for j, i := range p.Sort {
		ty := p.Table.Fields[i].Type
		if p.after[j], b, err = readVal(b, ty); err != nil {
			return bad
		}
		p.After = append(p.After, ty.goValue(p.after[j]))
	}
	if validKey(string(b)) != nil {
		return bad
	}
	p.afterKey = string(b)
	p.After = append(p.After, p.afterKey)
	return nil
}

// groupKey is a value as CountBy's map key: text as it is, int and time
// (RFC 3339 to the microsecond) in decimal and text form.
func (ty Type) groupKey(v val) string {
	switch ty {
	case TypeText:
		return v.s
	case TypeTime:
		return fromMicros(v.n).Format(time.RFC3339Nano)
	}
	return strconv.FormatInt(v.n, 10)
}

// GroupKey renders a Go value of type ty as CountBy's map key.
func (ty Type) GroupKey(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case time.Time:
		return x.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	return ""
}

// decodePage decodes a raw page's values as T.
func decodePage[T any](rp RawPage) (Page[T], error) {
	out := Page[T]{Items: make([]T, len(rp.Items)), Keys: make([]string, len(rp.Items)), Total: rp.Total, Next: rp.Next}
	for i, it := range rp.Items {
		if err := json.Unmarshal(it.Value, &out.Items[i]); err != nil {
			return Page[T]{}, fmt.Errorf("record %q: %w", it.Key, err)
		}
		out.Keys[i] = it.Key
	}
	return out, nil
}
