package mcp

import (
	"fmt"
	"unicode/utf8"
)

// maxBudget bounds max_chars and --mcp-output-budget.
const maxBudget = 1_000_000

// page is a window of a longer text.
type page struct {
	Text string
	// Next is the offset (in characters) to read on from; 0 when the
	// window reaches the end.
	Next  int
	Total int
}

// trimText answers the characters of s from offset, at most max of them,
// with a marker after the text saying where it stopped and how to read
// on. Offsets count characters (runes), so a window never cuts one.
func trimText(s string, offset, max int) page {
	total := utf8.RuneCountInString(s)
	if offset >= total {
		return page{Total: total}
	}
	start := byteIndex(s, offset)
	rest := s[start:]
	if utf8.RuneCountInString(rest) <= max {
		return page{Text: rest, Total: total}
	}
	end := byteIndex(rest, max)
	next := offset + max
	marker := fmt.Sprintf("\n[trimmed: characters %d to %d of %d shown; call again with offset=%d to read on]", offset, next, total, next)
	return page{Text: rest[:end] + marker, Next: next, Total: total}
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

// budget is a call's max_chars, else the service's default.
func (s *Service) budget(maxChars int) int {
	if maxChars <= 0 {
		return s.set.OutputBudget
	}
	return min(maxChars, maxBudget)
}
