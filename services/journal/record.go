package journal

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/platform/contract"
)

// Limits on what one entry may carry; longer parts are cut (and marked).
const (
	MaxSourceLen  = 128
	MaxMessageLen = 64 << 10
)

// Levels, least severe first; a level filter keeps that level and above
// (journalctl -p).
var levels = []string{"debug", "info", "warn", "error"}

// levelOf maps what writers send (syslog names included) to a level index.
func levelOf(s string) byte {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug", "trace":
		return 0
	case "warn", "warning", "notice":
		return 2
	case "error", "err", "crit", "critical", "alert", "emerg", "fatal", "panic":
		return 3
	}
	return 1
}

// Entry is one journal entry as readers get it.
type Entry struct {
	Cursor  string         `json:"cursor" required:"true" doc:"opaque position of this entry: pass it as cursor= (or SSE Last-Event-ID) to resume right after it"`
	Time    time.Time      `json:"time" required:"true"`
	Source  string         `json:"source" required:"true" doc:"the service, program or \"agent\" that wrote it"`
	Level   string         `json:"level" required:"true" enum:"debug,info,warn,error"`
	Message string         `json:"message" required:"true"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// body is an entry on its way to the store.
type body struct {
	Time    time.Time
	Source  string
	Level   string
	Message string
	Fields  json.RawMessage
}

// payload is the JSON part of a stored record: what the header does not
// hold.
type payload struct {
	Message string          `json:"message"`
	Fields  json.RawMessage `json:"fields,omitempty"`
}

// A stored record is a fixed header, so filters on time, level and
// source never decode JSON, then the entry's JSON:
//
//	[0:8]   time, Unix ns (big endian)
//	[8:16]  watermark: the newest time stored up to this entry, Unix ns
//	[16]    level index
//	[17]    source length n
//	[18:18+n] source
//	[18+n:] JSON of payload: {"message", "fields"?}
const headerFixed = 18

type header struct {
	time, mark int64
	level      byte
	source     string
	json       []byte
}

func parseHeader(raw []byte) (header, bool) {
	if len(raw) < headerFixed {
		return header{}, false
	}
	n := int(raw[17])
	if len(raw) < headerFixed+n {
		return header{}, false
	}
	return header{
		time:   int64(binary.BigEndian.Uint64(raw[0:8])),
		mark:   int64(binary.BigEndian.Uint64(raw[8:16])),
		level:  raw[16],
		source: string(raw[headerFixed : headerFixed+n]),
		json:   raw[headerFixed+n:],
	}, true
}

// normalize makes a writer's entry storable: a time, a known level, a
// bounded valid source and message, fields that encode.
func normalize(e contract.JournalEntry, now time.Time) (body, byte) {
	if e.Time.IsZero() {
		e.Time = now
	}
	src := cmp.Or(strings.ToValidUTF8(e.Source, "?"), "unknown")
	if len(src) > MaxSourceLen {
		src = cut(src, MaxSourceLen)
	}
	msg := strings.ToValidUTF8(e.Message, "\uFFFD")
	var fields json.RawMessage
	if len(e.Fields) > 0 {
		raw, err := json.Marshal(e.Fields)
		if err != nil {
			raw, _ = json.Marshal(map[string]string{"fields_error": err.Error()})
		}
		fields = raw
	}
	if len(msg) > MaxMessageLen {
		msg = cut(msg, MaxMessageLen) + " [truncated]"
	}
	lv := levelOf(e.Level)
	return body{Time: e.Time.UTC(), Source: src, Level: levels[lv], Message: msg, Fields: fields}, lv
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// encode makes the stored record of b.
func encode(b body, lv byte, mark int64) ([]byte, error) {
	msg, err := json.Marshal(b.Message)
	if err != nil {
		return nil, err
	}
	out := make([]byte, headerFixed, headerFixed+len(b.Source)+len(msg)+len(b.Fields)+24)
	binary.BigEndian.PutUint64(out[0:8], uint64(b.Time.UnixNano()))
	binary.BigEndian.PutUint64(out[8:16], uint64(mark))
	out[16] = lv
	out[17] = byte(len(b.Source))
	out = append(out, b.Source...)
	out = append(out, `{"message":`...)
	out = append(out, msg...)
	if len(b.Fields) > 0 {
		out = append(out, `,"fields":`...)
		out = append(out, b.Fields...)
	}
	return append(out, '}'), nil
}

// seqKey is the store key of sequence number n: fixed-width hex, so keys
// sort as numbers.
func seqKey(n uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return hex.EncodeToString(b[:])
}

// Cursors are "j1." + base64url(journal id [8] || seq [8]): opaque to
// readers, tied to this journal so one from a wiped journal is noticed.
const cursorPrefix = "j1."

func makeCursor(id []byte, seq uint64) string {
	var b [16]byte
	copy(b[:8], id)
	binary.BigEndian.PutUint64(b[8:], seq)
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func parseCursor(s string) (id []byte, seq uint64, ok bool) {
	if !strings.HasPrefix(s, cursorPrefix) {
		return nil, 0, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(cursorPrefix):])
	if err != nil || len(raw) != 16 {
		return nil, 0, false
	}
	return raw[:8], binary.BigEndian.Uint64(raw[8:]), true
}

// jsonLine writes an entry's JSON line from its header and stored
// payload: cursor, time, source, level, then the payload's members.
func jsonLine(dst []byte, cursor string, h header) []byte {
	dst = append(dst, `{"cursor":"`...)
	dst = append(dst, cursor...)
	dst = append(dst, `","time":"`...)
	dst = time.Unix(0, h.time).UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","source":`...)
	src, _ := json.Marshal(h.source)
	dst = append(dst, src...)
	dst = append(dst, `,"level":"`...)
	dst = append(dst, levels[min(int(h.level), len(levels)-1)]...)
	dst = append(dst, `",`...)
	return append(dst, h.json[1:]...)
}
