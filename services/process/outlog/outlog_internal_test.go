package outlog

import (
	"bytes"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

func testBudget(memPer, memTotal, diskPer, diskTotal int64) *Budget {
	return NewBudget(Limits{Memory: memPer, MemoryTotal: memTotal, Disk: diskPer,
		DiskTotal: diskTotal, ResumeGrace: time.Hour}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// readAll reads a log from off to its end.
func readAll(t *testing.T, l *Log, off int64) ([]byte, []*Gap) {
	t.Helper()
	c := l.Cursor(off)
	defer c.Close()
	var out []byte
	var gaps []*Gap
	for {
		pieces, gap, done, wait := c.Next(1 << 20)
		if gap != nil {
			gaps = append(gaps, gap)
		}
		for _, p := range pieces {
			out = append(out, p.Data...)
		}
		if done {
			return out, gaps
		}
		if wait != nil {
			t.Fatal("an open log at the end")
		}
	}
}

// TestHeldBytesGoToDiskNotAway: a follower's place at 0 keeps every byte,
// however little memory there is (here less than the global bound allows
// one process): they wait for the disk instead of being dropped.
func TestHeldBytesGoToDiskNotAway(t *testing.T) {
	t.Parallel()
	b := testBudget(64<<10, 64<<10, 8<<20, 8<<20)
	l := New(b, filepath.Join(t.TempDir(), "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	l.ReleaseHold(l.AddHold(0)) // as hold_output does
	var want bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 400; i++ {
			p := bytes.Repeat([]byte{byte(i)}, 8<<10+i)
			want.Write(p)
			l.Append(Stdout+byte(i%2), p, false)
		}
		l.Close()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second): // hang guard
		t.Fatal("appends never finished")
	}
	got, gaps := readAll(t, l, 0)
	if len(gaps) != 0 || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%d gaps, %d of %d bytes, equal %v", len(gaps), len(got), want.Len(), bytes.Equal(got, want.Bytes()))
	}
}

// TestUnheldOutputKeepsItsEnd: without followers and with a disk that
// cannot keep up (none at all here: spilling fails), memory still keeps
// the newest Chunk, and a read from 0 is told what went.
func TestUnheldOutputKeepsItsEnd(t *testing.T) {
	t.Parallel()
	b := testBudget(64<<10, 64<<10, 1<<20, 1<<20)
	l := New(b, filepath.Join(t.TempDir(), "missing-dir", "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	for i := 0; i < 100; i++ {
		l.Append(Stdout, bytes.Repeat([]byte{'x'}, 10<<10), false)
	}
	l.Append(Stderr, []byte("the end"), false)
	l.Close()
	got, gaps := readAll(t, l, 0)
	if len(gaps) != 1 || gaps[0].From != 0 || !bytes.HasSuffix(got, []byte("the end")) || int64(len(got)) != l.total-gaps[0].To {
		t.Fatalf("%v %q", gaps, got[max(0, len(got)-20):])
	}
	l.mu.Lock()
	inMemory := l.memBytes
	l.mu.Unlock()
	if inMemory > 64<<10+coalesceMax {
		t.Fatalf("%d bytes in memory", inMemory)
	}
}

// TestHeldBytesWhenOthersHoldTheMemory: another process fills the memory
// all processes share, so this one must keep almost nothing in memory
// while a follower needs all its bytes: they are written to disk for it,
// though it is far from its own memory bound.
func TestHeldBytesWhenOthersHoldTheMemory(t *testing.T) {
	t.Parallel()
	b := testBudget(8<<20, 8<<20, 16<<20, 32<<20)
	dir := t.TempDir()
	other := New(b, filepath.Join(dir, "other"))
	l := New(b, filepath.Join(dir, "p"))
	t.Cleanup(func() { other.Remove(); l.Remove(); b.Wait() })
	for i := 0; i < 8; i++ {
		other.Append(Stdout, bytes.Repeat([]byte{'o'}, 1<<20), false)
	}
	l.ReleaseHold(l.AddHold(0))
	var want bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 64; i++ {
			p := bytes.Repeat([]byte{byte(i)}, 32<<10)
			want.Write(p)
			l.Append(Stdout, p, false)
		}
		l.Close()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second): // hang guard
		t.Fatal("appends never finished: nothing wrote the held bytes to disk")
	}
	if got, gaps := readAll(t, l, 0); len(gaps) != 0 || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%d gaps, %d of %d bytes", len(gaps), len(got), want.Len())
	}
}

// TestRecycledSegmentsReadBack: a long output through a small disk bound
// reuses segment files; what is read back is each offset's own byte, not
// what a reused file held before.
func TestRecycledSegmentsReadBack(t *testing.T) {
	t.Parallel()
	b := testBudget(64<<10, 64<<10, 1<<20, 4<<20)
	l := New(b, filepath.Join(t.TempDir(), "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	l.ReleaseHold(l.AddHold(0)) // every byte goes through the disk
	h := l.AddHold(0)
	pattern := func(off int64) byte { return byte(off/997) ^ byte(off) }
	c := l.Cursor(0)
	defer c.Close()
	const total = 6 << 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		var off int64
		for off < total {
			p := make([]byte, 20<<10+int(off%4096))
			for i := range p {
				p[i] = pattern(off + int64(i))
			}
			l.Append(Stdout, p, true)
			off += int64(len(p))
		}
		l.Close()
	}()
	// Read as a follower does, moving its place; every byte is checked.
	for {
		pieces, gap, end, wait := c.Next(256 << 10)
		if gap != nil {
			t.Fatalf("gap %+v for a held follower", gap)
		}
		for _, p := range pieces {
			for i, x := range p.Data {
				if want := pattern(p.Off + int64(i)); x != want {
					t.Fatalf("offset %d: %d, want %d", p.Off+int64(i), x, want)
				}
			}
		}
		l.MoveHold(h, c.Pos)
		if end {
			break
		}
		if wait != nil {
			<-wait
		}
	}
	<-done
	if c.Pos < total {
		t.Fatalf("read %d", c.Pos)
	}
}

// TestConnectedFollowerReadsFromMemory: the output gets no further ahead
// of a connected follower than memory holds, so the follower reads what
// it has not sent yet from memory, not back from the disk; the place of a
// follower that disconnected lets the output go on up to holdLimit.
func TestConnectedFollowerReadsFromMemory(t *testing.T) {
	t.Parallel()
	const memPer, Chunk, total = 1 << 20, 64 << 10, 8 << 20
	b := testBudget(memPer, 4*memPer, 64<<20, 64<<20) // holdLimit 32 MiB
	l := New(b, filepath.Join(t.TempDir(), "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	h := l.AddHold(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; n < total; n += Chunk {
			l.Append(Stdout, bytes.Repeat([]byte{byte(n / Chunk)}, Chunk), false)
		}
		l.Close()
	}()
	// settled answers the output's length once it stopped growing.
	settled := func() int64 {
		last := int64(-1)
		for {
			time.Sleep(50 * time.Millisecond)
			l.mu.Lock()
			n := l.total
			l.mu.Unlock()
			if n == last {
				return n
			}
			last = n
		}
	}
	c := l.Cursor(0)
	defer c.Close()
	for pos := int64(0); pos < 2*memPer; {
		ahead := settled() - pos
		if ahead > memPer/2 {
			t.Fatalf("the output got %d bytes ahead of a connected follower, lead %d", ahead, memPer/2)
		}
		l.mu.Lock()
		inMemory := c.Pos >= l.memStart()
		l.mu.Unlock()
		if !inMemory {
			t.Fatalf("the follower's next byte, at %d, is no longer in memory", c.Pos)
		}
		pieces, _, _, _ := c.Next(1 << 20)
		for _, p := range pieces {
			pos = p.end()
		}
		l.MoveHold(h, pos)
	}
	l.ReleaseHold(h) // disconnected: its place holds, the output goes on
	select {
	case <-done:
	case <-time.After(60 * time.Second): // hang guard
		t.Fatal("the output stalled once the follower disconnected")
	}
	if got, gaps := readAll(t, l, 0); len(gaps) != 0 || len(got) != total {
		t.Fatalf("%d gaps, %d of %d bytes", len(gaps), len(got), total)
	}
}
