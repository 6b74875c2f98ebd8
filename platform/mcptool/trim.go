package mcptool

import (
	"fmt"
	"unicode/utf8"
)

// MaxBudget bounds max_chars and a server's default budget.
const MaxBudget = 1_000_000

// Page is a window of a longer text.
type Page struct {
	Text string
	// Next is the offset (in characters) to read on from; 0 when the
	// window reaches the end.
	Next  int
	Total int
}

// Trim answers the characters of s from offset, at most max of them,
// with a marker after the text saying where it stopped and how to read
// on. Offsets count characters (runes), so a window never cuts one.
func Trim(s string, offset, max int) Page {
	total := utf8.RuneCountInString(s)
	if offset >= total {
		return Page{Total: total}
	}
	rest := s[byteIndex(s, offset):]
	if utf8.RuneCountInString(rest) <= max {
		return Page{Text: rest, Total: total}
	}
	next := offset + max
	marker := fmt.Sprintf("\n[trimmed: characters %d to %d of %d shown; call again with offset=%d to read on]", offset, next, total, next)
	return Page{Text: rest[:byteIndex(rest, max)] + marker, Next: next, Total: total}
}

// byteIndex is the byte offset of the n-th rune of s.
func byteIndex(s string, n int) int {
	i := 0
	for pos := range s {
		if i == n {
			return pos
		}
		i++
	}
	return len(s)
}
