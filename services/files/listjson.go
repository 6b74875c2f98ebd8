package files

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// A listing of 100,000 entries is about 30 MB of JSON; encoding/json's
// reflection spends most of the request's time there, so listings are
// appended by hand. The output is byte for byte what encoding/json
// produces for Listing (a test compares them).

func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s)
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendField(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func appendEntry(b []byte, e *Entry) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, e.Name)
	b = appendField(b, "path")
	b = appendJSONString(b, e.Path)
	b = appendField(b, "type")
	b = appendJSONString(b, e.Type)
	b = appendField(b, "size")
	b = strconv.AppendInt(b, e.Size, 10)
	b = appendField(b, "mode")
	b = appendJSONString(b, e.Mode)
	b = appendField(b, "permissions")
	b = appendJSONString(b, e.Perm)
	b = appendField(b, "owner")
	b = appendJSONString(b, e.Owner)
	b = appendField(b, "group")
	b = appendJSONString(b, e.Group)
	b = appendField(b, "uid")
	b = strconv.AppendUint(b, uint64(e.UID), 10)
	b = appendField(b, "gid")
	b = strconv.AppendUint(b, uint64(e.GID), 10)
	b = appendField(b, "modified")
	b = append(b, '"')
	b = e.Modified.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if e.Target != "" {
		b = appendField(b, "symlink_target")
		b = appendJSONString(b, e.Target)
	}
	if e.ETag != "" {
		b = appendField(b, "etag")
		b = appendJSONString(b, e.ETag)
	}
	return append(b, '}')
}

// MarshalJSON encodes a listing (see appendEntry).
func (l Listing) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(l.Entries)*280)
	b = append(b, `{"path":`...)
	b = appendJSONString(b, l.Path)
	b = append(b, `,"entries":[`...)
	for i := range l.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntry(b, &l.Entries[i])
	}
	b = append(b, `],"truncated":`...)
	b = strconv.AppendBool(b, l.Truncated)
	return append(b, '}'), nil
}
