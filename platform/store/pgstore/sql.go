package pgstore

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// value reads either column as bytes: jsonb as its text, raw as stored.
const value = "COALESCE(raw, convert_to(value::text, 'UTF8'))"

// hasNULEscape reports a \u0000 escape, which jsonb refuses: such a value
// is kept as exact bytes instead.
func hasNULEscape(raw []byte) bool {
	s := string(raw)
	for i := strings.Index(s, `\u0000`); i >= 0; {
		bs := 0 // an odd run of backslashes before "u0000" makes it an escape
		for j := i; j >= 0 && s[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 1 {
			return true
		}
		next := strings.Index(s[i+1:], `\u0000`)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func quoteLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }
