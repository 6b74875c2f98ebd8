package store

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// bbolt answers a Page by picking one access path, visiting its entries
// in order and counting every match (the total needs them all):
//
//   - the key itself when a condition names keys (eq, in);
//   - the index whose leading fields the most eq/in conditions fix, one
//     range per combination of their values, narrowed by range conditions
//     on the next column (a field, or the key after the last field);
//   - a union of such ranges when a group of alternatives (AnyOf) has one
//     for each alternative;
//   - an index declared Sort whose fields are exactly the sort;
//   - else every row.
//
// Conditions on the path's index fields and on the key are checked on the
// entry itself; only the others read the row. When the path yields the
// query's order the page is cut as entries come; otherwise matches are
// sorted by (sort values, key) in memory.

type access struct {
	index    int       // -1: rows (key order)
	prefixes [][]byte  // index ranges; nil with index -1
	keys     []string  // explicit keys (a key eq/in); nil otherwise
	next     int       // the column after the prefix: a field position, -1 the key, -2 none
	ordered  bool      // entries come in the query's order (before Desc)
	one      [1][]byte // prefixes' storage when there is one range
}

// covered reports the positions whose values the path's entries carry.
func (a *access) covers(t *Table, pos int) bool {
	if pos < 0 {
		return true
	}
	if a.index < 0 {
		return false
	}
	return slices.ContainsFunc(t.Indexes[a.index].Fields, func(f string) bool { return t.pos[f] == pos })
}

// eqValues are the values an eq or in condition fixes a column to (NULL
// included); nil when c fixes none.
func eqValues(c *Cond) []val {
	switch c.Op {
	case Eq:
		return c.vals
	case In:
		vs := slices.Clone(c.vals)
		if c.hasNull {
			vs = append(vs, nullVal)
		}
		return vs
	}
	return nil
}

// maxRanges bounds the ranges one path scans (combinations of in values).
const maxRanges = 1024

// fixedCols holds, by field position, the values eq and in conditions
// fix a column to; nil where none does.
type fixedCols [][]val

// indexShape is how far the fixed columns reach into index i: k leading
// fields, n prefixes to scan (the product of their value counts), and
// whether the index's remaining fields give p's sort order (one prefix
// only). choose compares every index by its shape and builds the prefixes
// of the one it takes.
func indexShape(p *Plan, i int, fixed fixedCols) (k, n int, ordered bool) {
	t := p.Table
	ix := t.Indexes[i]
	n = 1
	for _, f := range ix.Fields {
		vs := fixed[t.pos[f]]
		if vs == nil || n*len(vs) > maxRanges {
			break
		}
		n *= len(vs)
		k++
	}
	if k == 0 || n != 1 || len(ix.Fields)-k != len(p.Sort) {
		return k, n, false
	}
	for j, f := range ix.Fields[k:] {
		if t.pos[f] != p.Sort[j] {
			return k, n, false
		}
	}
	return k, n, true
}

// indexPath is the best path over index i given fixed columns, or nil.
func indexPath(p *Plan, i int, fixed fixedCols) *access {
	k, n, ordered := indexShape(p, i, fixed)
	if k == 0 {
		return nil
	}
	t := p.Table
	ix := t.Indexes[i]
	a := &access{index: i, next: -1, ordered: ordered}
	if n == 1 { // one range: its prefix is built in place
		var pre []byte
		for _, f := range ix.Fields[:k] {
			pre = appendVal(pre, t.Fields[t.pos[f]].Type, fixed[t.pos[f]][0])
		}
		a.one[0] = pre
		a.prefixes = a.one[:]
	} else {
		prefixes := [][]byte{nil}
		for _, f := range ix.Fields[:k] {
			vs := fixed[t.pos[f]]
			next := make([][]byte, 0, len(prefixes)*len(vs))
			for _, pre := range prefixes {
				for _, v := range vs {
					next = append(next, appendVal(bytes.Clone(pre), t.Fields[t.pos[f]].Type, v))
				}
			}
			prefixes = next
		}
		a.prefixes = prefixes
	}
	if k < len(ix.Fields) {
		a.next = t.pos[ix.Fields[k]]
	}
	return a
}

// choose picks the access paths of p (several: a union).
func choose(p *Plan) []*access {
	t := p.Table
	var buf [16][]val
	fixed := fixedCols(buf[:0])
	if n := len(t.Fields); n <= len(buf) {
		fixed = buf[:n]
	} else {
		fixed = make(fixedCols, n)
	}
	var keys []string
	for i := range p.All {
		c := &p.All[i]
		vs := eqValues(c)
		if vs == nil {
			continue
		}
		if c.Pos < 0 {
			ks := map[string]bool{}
			for _, v := range vs {
				if !v.null {
					ks[v.s] = true
				}
			}
			if keys != nil { // two key conditions: their intersection
				for k := range ks {
					if _, found := slices.BinarySearch(keys, k); !found {
						delete(ks, k)
					}
				}
			}
			keys = make([]string, 0, len(ks))
			for k := range ks {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			continue
		}
		if cur := fixed[c.Pos]; cur == nil || len(vs) < len(cur) {
			fixed[c.Pos] = vs
		}
	}
	if keys != nil {
		return []*access{{index: -1, keys: keys, next: -2, ordered: len(p.Sort) == 0}}
	}
	best, bestK, bestOrdered := -1, 0, false
	for i := range t.Indexes {
		k, _, ordered := indexShape(p, i, fixed)
		if k == 0 {
			continue
		}
		kf := 0
		for _, f := range t.Indexes[i].Fields {
			if fixed[t.pos[f]] != nil {
				kf++
			} else {
				break
			}
		}
		if best < 0 || kf > bestK || (kf == bestK && ordered && !bestOrdered) {
			best, bestK, bestOrdered = i, kf, ordered
		}
	}
	if best >= 0 {
		return []*access{indexPath(p, best, fixed)}
	}
	// A group of alternatives, each on a key or a leading index field.
	for _, g := range p.Any {
		var union []*access
		for j := range g {
			c := &g[j]
			vs := eqValues(c)
			if vs == nil {
				union = nil
				break
			}
			if c.Pos < 0 {
				var ks []string
				for _, v := range vs {
					if !v.null {
						ks = append(ks, v.s)
					}
				}
				sort.Strings(ks)
				union = append(union, &access{index: -1, keys: ks, next: -2})
				continue
			}
			var found *access
			one := make(fixedCols, len(t.Fields))
			one[c.Pos] = vs
			for i := range t.Indexes {
				if a := indexPath(p, i, one); a != nil {
					found = a
					break
				}
			}
			if found == nil {
				union = nil
				break
			}
			found.ordered = false
			union = append(union, found)
		}
		if union != nil {
			return union
		}
	}
	// A whole Sort index in order, when its entries answer every
	// condition; when some need the row, reading the rows in sequence and
	// sorting the matches beats a row lookup per entry.
	entryOnly := len(p.Any) == 0
	for i := range p.All {
		if p.All[i].Pos >= 0 && !slices.Contains(p.Sort, p.All[i].Pos) {
			entryOnly = false
		}
	}
	if len(p.Sort) > 0 && entryOnly {
		for i, ix := range t.Indexes {
			if !ix.Sort || len(ix.Fields) != len(p.Sort) {
				continue
			}
			same := true
			for j, f := range ix.Fields {
				same = same && t.pos[f] == p.Sort[j]
			}
			if same {
				return []*access{{index: i, prefixes: [][]byte{nil}, next: p.Sort[0], ordered: true}}
			}
		}
	}
	return []*access{{index: -1, next: -1, ordered: len(p.Sort) == 0}}
}

// rangeConds splits the conditions on column col into those that bound
// it from below and from above.
func rangeConds(p *Plan, col int) (lo, hi []*Cond) {
	for i := range p.All {
		c := &p.All[i]
		if c.Pos != col || len(c.vals) != 1 || c.vals[0].null {
			continue
		}
		switch c.Op {
		case Gt, Gte:
			lo = append(lo, c)
		case Lt, Lte:
			hi = append(hi, c)
		}
	}
	return lo, hi
}

// boundBytes is the encoded bound of the tightest condition of cs (for
// lo the greatest, for hi the least) on column col.
func boundBytes(t *Table, col int, cs []*Cond, greatest bool) ([]byte, bool) {
	if len(cs) == 0 {
		return nil, false
	}
	ty := TypeText
	if col >= 0 {
		ty = t.Fields[col].Type
	}
	b := cs[0].vals[0]
	for _, c := range cs[1:] {
		r := compareVal(ty, c.vals[0], b)
		if (greatest && r > 0) || (!greatest && r < 0) {
			b = c.vals[0]
		}
	}
	if col < 0 {
		return []byte(b.s), true
	}
	return appendVal(nil, ty, b), true
}

func allHold(cs []*Cond, row []val, key string) bool {
	for _, c := range cs {
		if !c.holds(row, key) {
			return false
		}
	}
	return true
}

// visit walks one access path in order (reversed with desc) and hands
// fn each candidate's key and the row positions the entry carries. The
// key and the row's text alias the transaction's pages: fn copies what
// it keeps beyond the transaction.
func (m *matcher) visit(a *access, desc bool, fn func(key string, row []val, fromRow bool) (bool, error)) error {
	p, tb := m.p, m.p.Table
	row := m.row
	var rows *bolt.Bucket
	if a.index < 0 {
		var err error
		if rows, err = m.rowBucket(); err != nil {
			return err
		}
	}
	if a.keys != nil {
		ks := a.keys
		if desc {
			ks = slices.Clone(ks)
			slices.Reverse(ks)
		}
		for _, k := range ks {
			raw := rows.Get([]byte(k))
			if raw == nil {
				continue
			}
			if err := tb.decodeRowView(raw, row); err != nil {
				return err
			}
			if more, err := fn(k, row, true); err != nil || !more {
				return err
			}
		}
		return nil
	}
	lo, hi := rangeConds(p, a.next)
	if a.next == -2 {
		lo, hi = nil, nil
	}
	b, fromRow := rows, true
	prefixes := [][]byte{nil}
	if a.index >= 0 {
		b, fromRow, prefixes = m.idx[a.index], false, a.prefixes
	}
	if desc {
		prefixes = slices.Clone(prefixes)
		slices.Reverse(prefixes)
	}
	loB, hasLo := boundBytes(tb, a.next, lo, true)
	hiB, hasHi := boundBytes(tb, a.next, hi, false)
	for _, pre := range prefixes {
		c := b.Cursor()
		var k, v []byte
		if !desc {
			start := pre
			if hasLo {
				start = append(bytes.Clone(pre), loB...)
			}
			k, v = c.Seek(start)
		} else {
			var x []byte
			switch {
			case hasHi:
				x = append(append(bytes.Clone(pre), hiB...), 0xff)
			case len(pre) > 0:
				x = bytesPrefixEnd(pre)
			}
			if x == nil {
				k, v = c.Last()
			} else if k, v = c.Seek(x); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, pre); k, v = step(c, desc) {
			var key string
			if fromRow {
				key = unsafe.String(unsafe.SliceData(k), len(k))
				if err := tb.decodeRowView(v, row); err != nil {
					return err
				}
			} else {
				var err error
				if key, err = tb.decodeEntryView(a.index, k, row); err != nil {
					return err
				}
			}
			if a.next != -2 && (len(lo) > 0 || len(hi) > 0) {
				nv := val{s: key}
				if a.next >= 0 {
					nv = row[a.next]
				}
				if a.next >= 0 && nv.null {
					continue
				}
				okLo, okHi := allHold(lo, row, key), allHold(hi, row, key)
				if !okLo || !okHi {
					if (!desc && !okHi) || (desc && !okLo) {
						break // past the range: the rest of this prefix is too
					}
					continue
				}
			}
			more, err := fn(key, row, fromRow)
			if err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// bytesPrefixEnd is the least byte string above every string starting
// with pre (nil when there is none).
func bytesPrefixEnd(pre []byte) []byte {
	end := bytes.Clone(pre)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func step(c *bolt.Cursor, desc bool) ([]byte, []byte) {
	if desc {
		return c.Prev()
	}
	return c.Next()
}

// matcher evaluates candidates of a plan's access paths: conditions the
// path's entries carry on the entry, the rest (and fields need names) on
// the row.
type matcher struct {
	p           *Plan
	tx          *bolt.Tx
	rows        *bolt.Bucket // opened by the first candidate that needs a row
	idx         []*bolt.Bucket
	paths       []*access
	onEntry     []*Cond
	onRow       []*Cond
	need        []int
	row         []val        // the values a path's entry carries
	scratch     []val        // the row a candidate's conditions read (strings alias the transaction's pages)
	unavailable bool         // the table has no records yet
	prim        *bolt.Bucket // the records (nil when unavailable)
	// needRow, per path: a candidate from the path's entries reads its row.
	needRow []bool

	// Storage for the slices above on small tables and plans.
	idxBuf  [8]*bolt.Bucket
	condBuf [4]*Cond
	valBuf  [24]val
	needBuf [2]bool
}

// rowBucket is the table's encoded rows.
func (m *matcher) rowBucket() (*bolt.Bucket, error) {
	if m.rows == nil {
		if m.rows = m.tx.Bucket(rowBucket(m.p.Table)); m.rows == nil {
			return nil, fmt.Errorf("table %s: %w", m.p.Table.Name, errNotBuilt)
		}
	}
	return m.rows, nil
}

// matcher plans p (its access paths) and opens what they read. need is
// the fields a candidate's row must supply beyond its conditions; when
// needSort is set, p's sort fields are needed too unless the one path
// taken already yields p's order.
func (t *boltTx) matcher(p *Plan, need []int, needSort bool) (*matcher, error) {
	tb := p.Table
	paths := choose(p)
	if needSort && !paths[0].ordered {
		need = append(need, p.Sort...)
	}
	m := &matcher{p: p, tx: t.tx, paths: paths, need: need}
	// A read opens the buckets of the paths it takes, not every index's,
	// and the rows' only when a candidate needs its row.
	m.idx = m.idxBuf[:0]
	if len(tb.Indexes) > len(m.idxBuf) {
		m.idx = make([]*bolt.Bucket, 0, len(tb.Indexes))
	}
	m.idx = m.idx[:len(tb.Indexes)]
	for _, a := range paths {
		if a.index < 0 || m.idx[a.index] != nil {
			continue
		}
		if m.idx[a.index] = t.tx.Bucket(indexBucket(tb, a.index)); m.idx[a.index] == nil {
			return nil, fmt.Errorf("table %s: %w", tb.Name, errNotBuilt)
		}
	}
	m.prim = t.tx.Bucket(tb.nameBkt)
	m.unavailable = m.prim == nil
	if m.unavailable {
		return m, nil
	}
	m.onEntry = m.condBuf[:0:len(m.condBuf)]
	for i := range p.All {
		c := &p.All[i]
		if len(m.paths) == 1 && m.paths[0].covers(tb, c.Pos) {
			m.onEntry = append(m.onEntry, c)
		} else {
			m.onRow = append(m.onRow, c)
		}
	}
	m.needRow = m.needBuf[:0]
	for _, a := range paths {
		m.needRow = append(m.needRow, len(m.onRow) > 0 || len(p.Any) > 0 ||
			slices.ContainsFunc(m.need, func(pos int) bool { return !a.covers(tb, pos) }))
	}
	if n := len(tb.Fields); 2*n <= len(m.valBuf) {
		m.row, m.scratch = m.valBuf[:n:n], m.valBuf[n:2*n:2*n]
	} else {
		vals := make([]val, 2*n)
		m.row, m.scratch = vals[:n:n], vals[n:]
	}
	return m, nil
}

// match is the row of a candidate (the i-th path's) when it passes every
// condition.
func (m *matcher) match(i int, key string, row []val, fromRow bool) ([]val, bool, error) {
	tb := m.p.Table
	if !fromRow && m.needRow[i] {
		rows, err := m.rowBucket()
		if err != nil {
			return nil, false, err
		}
		raw := rows.Get([]byte(key))
		if raw == nil {
			return nil, false, nil
		}
		if err := tb.decodeRowView(raw, m.scratch); err != nil {
			return nil, false, err
		}
		row = m.scratch
	}
	if !allHold(m.onEntry, row, key) || !allHold(m.onRow, row, key) {
		return nil, false, nil
	}
	for _, g := range m.p.Any {
		ok := false
		for i := range g {
			if g[i].holds(row, key) {
				ok = true
				break
			}
		}
		if !ok {
			return nil, false, nil
		}
	}
	return row, true, nil
}

// each hands fn every match once, in no particular order.
func (m *matcher) each(fn func(key string, row []val) error) error {
	var seen map[string]bool
	if len(m.paths) > 1 {
		seen = map[string]bool{}
	}
	for i, a := range m.paths {
		err := m.visit(a, false, func(key string, row []val, fromRow bool) (bool, error) {
			if seen != nil {
				if seen[key] {
					return true, nil
				}
				seen[key] = true
			}
			r, ok, err := m.match(i, key, row, fromRow)
			if err != nil || !ok {
				return true, err
			}
			return true, fn(key, r)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *boltTx) Page(p *Plan) (PageResult, error) {
	m, err := t.matcher(p, nil, true)
	if err != nil || m.unavailable {
		return PageResult{}, err
	}
	var res PageResult
	res.Items = make([]Item, 0, min(p.Limit, 8))
	if len(m.paths) == 1 && m.paths[0].ordered {
		a := m.paths[0]
		// No conditions at all over every row: the count is the bucket's.
		quick := len(p.All) == 0 && len(p.Any) == 0 && a.index < 0 && a.keys == nil && !p.SkipTotal
		if quick {
			rows, err := m.rowBucket()
			if err != nil {
				return PageResult{}, err
			}
			res.Total = rows.Stats().KeyN
		}
		counting := !quick && !p.SkipTotal
		skipped := 0
		err := m.visit(a, p.Desc, func(key string, row []val, fromRow bool) (bool, error) {
			r, ok, err := m.match(0, key, row, fromRow)
			if err != nil || !ok {
				return true, err
			}
			if counting {
				res.Total++
			}
			if !p.pastCursor(r, key) {
				return true, nil
			}
			if skipped < p.Offset {
				skipped++
				return true, nil
			}
			if len(res.Items) < p.Limit {
				res.Items = m.take(res.Items, key)
				return true, nil
			}
			res.More = true
			return counting, nil
		})
		return res, err
	}
	type hit struct {
		key string
		row []val
	}
	var hits []hit
	err = m.each(func(key string, row []val) error {
		h := hit{key: key}
		if len(p.Sort) > 0 {
			h.row = slices.Clone(row)
		}
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return PageResult{}, err
	}
	sort.Slice(hits, func(i, j int) bool {
		c := p.compareAt(hits[i].row, hits[i].key, hits[j].row, hits[j].key)
		if p.Desc {
			return c > 0
		}
		return c < 0
	})
	if !p.SkipTotal {
		res.Total = len(hits)
	}
	skipped := 0
	for _, h := range hits {
		if !p.pastCursor(h.row, h.key) {
			continue
		}
		if skipped < p.Offset {
			skipped++
			continue
		}
		if len(res.Items) == p.Limit {
			res.More = true
			break
		}
		res.Items = m.take(res.Items, h.key)
	}
	return res, nil
}

// take appends the record of key (a key visit handed out: copied here).
func (m *matcher) take(items []Item, key string) []Item {
	return append(items, Item{Key: strings.Clone(key), Value: m.prim.Get([]byte(key))})
}

func (t *boltTx) CountBy(p *Plan, field int) (map[string]int, error) {
	m, err := t.matcher(p, []int{field}, false)
	if err != nil || m.unavailable {
		return map[string]int{}, err
	}
	out := map[string]int{}
	err = m.each(func(_ string, row []val) error {
		if v := row[field]; !v.null {
			out[strings.Clone(p.Table.Fields[field].Type.groupKey(v))]++
		}
		return nil
	})
	return out, err
}
