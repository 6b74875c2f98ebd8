package terminal

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// The ring must always hold exactly the last max bytes written, whatever
// the write sizes (smaller, equal to, larger than max; wrapping many times).
func TestRingKeepsTheTail(t *testing.T) {
	t.Parallel()
	for _, max := range []int{1024, 4096, 10000} {
		r := ring{max: max}
		var all []byte
		rng := rand.New(rand.NewPCG(1, uint64(max)))
		for i := 0; i < 500; i++ {
			n := rng.IntN(max * 2)
			if i%50 == 0 {
				n = max
			}
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(rng.IntN(256))
			}
			r.write(p)
			all = append(all, p...)
			if r.total != int64(len(all)) {
				t.Fatalf("total %d, want %d", r.total, len(all))
			}
			tail := all[max0(len(all)-max):]
			if got := r.since(0); !bytes.Equal(got, tail) {
				t.Fatalf("max %d after %d writes: ring holds %d bytes that differ from the tail", max, i+1, len(got))
			}
			if r.oldest() != int64(len(all)-len(tail)) {
				t.Fatalf("oldest %d, want %d", r.oldest(), len(all)-len(tail))
			}
			from := r.oldest() + int64(rng.IntN(len(tail)+1))
			if got := r.since(from); !bytes.Equal(got, all[from:]) {
				t.Fatalf("since(%d) differs", from)
			}
			if cap(r.data) > max {
				t.Fatalf("ring grew to %d > %d", cap(r.data), max)
			}
		}
	}
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// A rune split across two chunks of output still lands whole on the screen.
func TestScreenJoinsSplitRunes(t *testing.T) {
	t.Parallel()
	s := &Session{cols: 20, rows: 3, ring: ring{max: 1 << 20}}
	text := []byte("héllo wörld €")
	for i := range text {
		s.ring.write(text[i : i+1])
		s.screen()
	}
	got := strings.Split(s.screen().text(), "\n")[0]
	if got != "héllo wörld €" {
		t.Fatalf("screen line %q", got)
	}
}
