package journal

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Filter selects entries.
type Filter struct {
	Sources  []string // any of these; none: every source
	MinLevel int      // 0 debug (everything) .. 3 error
	Since    *time.Time
	Until    *time.Time
	Text     string // case-insensitive substring of the message
	Regex    *regexp.Regexp
}

// Query is one read: a filter, where to start and how many.
type Query struct {
	Filter
	// Cursor resumes after (forward) or before (Reverse) this position.
	Cursor  string
	Reverse bool
	Limit   int
}

// Page is what a read answers.
type Page struct {
	Entries []Entry
	// Lines are the entries as JSON lines (cursor first), same order.
	Lines [][]byte
	// Cursor is the position to pass back for the next page.
	Cursor string
	// Gap: the cursor was older than the oldest kept entry (or from
	// another journal); the read resumed at the oldest.
	Gap bool
	// last is the sequence number the next forward read starts after.
	last uint64
}

type match struct {
	seq  uint64
	line []byte
	e    Entry
}

func (f *Filter) pass(h header) bool {
	if int(h.level) < f.MinLevel {
		return false
	}
	if len(f.Sources) > 0 && !slices.Contains(f.Sources, h.source) {
		return false
	}
	if f.Since != nil && h.time < f.Since.UnixNano() {
		return false
	}
	return f.Until == nil || h.time <= f.Until.UnixNano()
}

// Read answers q against the store.
func (s *Service) Read(q Query) (Page, error) {
	snap, _ := s.current()
	return s.read(q, snap)
}

func (s *Service) read(q Query, snap snapshot) (Page, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	page := Page{}
	// Resolve the cursor: forward reads start after it, reverse ones
	// before it.
	var after, before uint64
	haveCursor := q.Cursor != ""
	if haveCursor {
		id, seq, ok := parseCursor(q.Cursor)
		if !ok {
			return Page{}, fault.Invalid("cursor", "is not a journal cursor (use the cursor of an entry or the X-Journal-Cursor header as given)")
		}
		if !bytes.Equal(id, snap.id) || seq > snap.head {
			page.Gap = true
			seq = snap.oldest - 1
			if q.Reverse {
				seq = snap.head + 1
			}
		} else if seq+1 < snap.oldest {
			page.Gap = !q.Reverse
			seq = snap.oldest - 1
		}
		after, before = seq, seq
	}
	var found []match
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		switch {
		case q.Reverse:
			start := snap.head
			if haveCursor {
				if before == 0 {
					return nil
				}
				start = before - 1
			}
			found, err = s.scan(tx, q, snap, start, true, q.Limit)
		case haveCursor || q.Since != nil:
			start := after + 1
			if !haveCursor {
				start = snap.oldest
			}
			if q.Since != nil {
				start = max(start, s.firstAtOrAfter(tx, snap, q.Since.UnixNano()))
			}
			found, err = s.scan(tx, q, snap, start, false, q.Limit)
		default:
			// The newest Limit entries, oldest first (journalctl -n).
			found, err = s.scan(tx, q, snap, snap.head, true, q.Limit)
			for i, j := 0, len(found)-1; i < j; i, j = i+1, j-1 {
				found[i], found[j] = found[j], found[i]
			}
		}
		return err
	})
	if err != nil {
		if pe, ok := err.(*fault.Error); ok {
			return Page{}, pe
		}
		return Page{}, fault.Internal("read the journal", err)
	}
	for _, m := range found {
		page.Entries = append(page.Entries, m.e)
		page.Lines = append(page.Lines, m.line)
	}
	switch {
	case len(found) > 0 && (q.Reverse || len(found) >= q.Limit):
		last := found[len(found)-1].seq
		page.Cursor, page.last = makeCursor(snap.id, last), last
	case q.Reverse:
		page.Cursor, page.last = makeCursor(snap.id, snap.oldest-1), snap.head
	default:
		// A forward read that ended before its limit looked at everything
		// up to the head: the next one starts there.
		page.Cursor, page.last = makeCursor(snap.id, snap.head), snap.head
	}
	return page, nil
}

// scan visits entries from seq start (down when reverse) and keeps those
// that pass, up to limit.
func (s *Service) scan(tx *store.Tx, q Query, snap snapshot, start uint64, reverse bool, limit int) ([]match, error) {
	if start < snap.oldest || start > snap.head {
		if !(reverse && start > snap.head && snap.head >= snap.oldest) {
			return nil, nil
		}
		start = snap.head
	}
	var out []match
	var stopAfter, stopBefore int64 = 1<<63 - 1, -1 << 63
	if q.Until != nil && !reverse {
		stopAfter = q.Until.UnixNano() + snap.maxLate
	}
	if q.Since != nil && reverse {
		stopBefore = q.Since.UnixNano()
	}
	lowerText := strings.ToLower(q.Text)
	// A needle JSON writes as it is (printable ASCII without quotes,
	// backslashes or HTML characters) can be looked for in the stored JSON
	// before decoding it: no match there, no match in the message.
	prefilter := lowerText != "" && jsonVerbatim(lowerText)
	err := tx.Scan(bucketEntries, store.ScanOptions{Start: seqKey(start), Reverse: reverse}, func(k string, raw []byte) error {
		h, ok := parseHeader(raw)
		if !ok {
			return nil
		}
		if h.mark > stopAfter || (reverse && h.mark < stopBefore) {
			return store.ErrStop
		}
		if !q.pass(h) {
			return nil
		}
		if prefilter && !containsFold(h.json, lowerText) {
			return nil
		}
		var b payload
		if err := json.Unmarshal(h.json, &b); err != nil {
			return nil
		}
		if lowerText != "" && !strings.Contains(strings.ToLower(b.Message), lowerText) {
			return nil
		}
		if q.Regex != nil && !q.Regex.MatchString(b.Message) {
			return nil
		}
		seq := seqOf(k)
		cur := makeCursor(snap.id, seq)
		e := Entry{Cursor: cur, Time: time.Unix(0, h.time).UTC(), Source: h.source,
			Level: levels[min(int(h.level), len(levels)-1)], Message: b.Message}
		if len(b.Fields) > 0 {
			_ = json.Unmarshal(b.Fields, &e.Fields)
		}
		out = append(out, match{seq: seq, line: jsonLine(nil, cur, h), e: e})
		if len(out) >= limit {
			return store.ErrStop
		}
		return nil
	})
	return out, err
}

func seqOf(k string) uint64 {
	var n uint64
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint64(c-'a'+10)
		}
	}
	return n
}

// firstAtOrAfter bisects for the first sequence number whose watermark is
// at least t: every entry before it has a time before t.
func (s *Service) firstAtOrAfter(tx *store.Tx, snap snapshot, t int64) uint64 {
	lo, hi := snap.oldest, snap.head+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		h, ok := parseHeader(tx.GetRaw(bucketEntries, seqKey(mid)))
		if ok && h.mark >= t {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// shortLine is journalctl's short format: time, source, level, message.
func shortLine(dst []byte, e Entry) []byte {
	dst = e.Time.Local().AppendFormat(dst, "Jan 02 15:04:05.000000")
	dst = append(dst, ' ')
	dst = append(dst, e.Source...)
	dst = append(dst, '[')
	dst = append(dst, e.Level...)
	dst = append(dst, "]: "...)
	dst = append(dst, strings.ReplaceAll(e.Message, "\n", "\n    ")...)
	if len(e.Fields) > 0 {
		for _, k := range slices.Sorted(maps.Keys(e.Fields)) {
			v, _ := json.Marshal(e.Fields[k])
			dst = append(dst, ' ')
			dst = append(dst, k...)
			dst = append(dst, '=')
			dst = append(dst, v...)
		}
	}
	return append(dst, '\n')
}

// jsonVerbatim reports whether encoding/json writes s unchanged inside a
// string.
func jsonVerbatim(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// containsFold reports whether hay contains lower (ASCII, lower case),
// ignoring ASCII case in hay.
func containsFold(hay []byte, lower string) bool {
	n := len(lower)
	first := lower[0]
	for i := 0; i+n <= len(hay); i++ {
		c := hay[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != first {
			continue
		}
		j := 1
		for ; j < n; j++ {
			d := hay[i+j]
			if d >= 'A' && d <= 'Z' {
				d += 'a' - 'A'
			}
			if d != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
