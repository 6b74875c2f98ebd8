package proc

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// MaxLine is the longest line ReadLines hands over whole; longer lines
// arrive in pieces of this size.
const MaxLine = 16 << 10

// ReadLines calls fn with each line of r (without its newline, invalid
// UTF-8 replaced) until r ends.
func ReadLines(r io.Reader, fn func(line string)) {
	br := bufio.NewReaderSize(r, MaxLine)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			line := strings.TrimRight(string(b), "\r\n")
			fn(strings.ToValidUTF8(line, "\uFFFD"))
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}

// Tail keeps the last Max bytes written to it and counts the rest, so a
// run's record holds the end of its output (where an error or a hang
// shows) and says it was truncated.
type Tail struct {
	Max     int
	mu      sync.Mutex
	buf     []byte
	dropped int64
}

// Write keeps the newest bytes; it never fails, so a chatty command is
// never blocked or broken by the limit.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is what was kept, as valid UTF-8.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD")
}

// Truncated reports whether bytes were dropped.
func (t *Tail) Truncated() bool { t.mu.Lock(); defer t.mu.Unlock(); return t.dropped > 0 }
