package outlog

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBulkReadsRecycleBuffers: a process's bulk output is read into
// recycled buffers, so following it allocates a small part of what it
// moves; and a reader's pieces keep their bytes until its next read, even
// while the log lets go of them and the pipe's reader takes their buffers
// back for new output. Every byte is compared.
func TestBulkReadsRecycleBuffers(t *testing.T) {
	const total = 48 << 20
	b := testBudget(2<<20, 2<<20, 8<<20, 8<<20)
	l := New(b, filepath.Join(t.TempDir(), "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	block := make([]byte, 1<<20+7) // not a divisor of the buffers' size
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range block {
		block[i] = byte(rng.Uint32())
	}
	// fill writes the bytes from off into p; same compares p with them
	// (neither allocates: the test measures the log's allocations).
	fill := func(off int64, p []byte) {
		for n := 0; n < len(p); {
			k := int((off + int64(n)) % int64(len(block)))
			n += copy(p[n:], block[k:])
		}
	}
	same := func(off int64, p []byte) bool {
		for n := 0; n < len(p); {
			k := int((off + int64(n)) % int64(len(block)))
			m := min(len(p)-n, len(block)-k)
			if !bytes.Equal(p[n:n+m], block[k:k+m]) {
				return false
			}
			n += m
		}
		return true
	}
	r := feedPipe(t, total, 128<<10, fill)
	var draining atomic.Bool
	read := make(chan struct{})
	go func() {
		defer close(read)
		l.Fill(r, r.Read, Stdout, &draining, time.Second, nil)
		_ = r.Close()
		l.Close()
	}()
	h := l.AddHold(0)
	c := l.Cursor(0)
	defer c.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for {
		pieces, gap, end, wait := c.Next(256 << 10)
		if gap != nil {
			t.Fatalf("gap %+v for a held follower", gap)
		}
		for _, pc := range pieces {
			if !same(pc.Off, pc.Data) {
				t.Fatalf("bytes at %d differ", pc.Off)
			}
		}
		// Let the pipe's reader go on (it waits on this place) while the
		// pieces are still held: their bytes must not change.
		l.MoveHold(h, c.Pos)
		runtime.Gosched()
		for _, pc := range pieces {
			if !same(pc.Off, pc.Data) {
				t.Fatalf("bytes at %d changed while held", pc.Off)
			}
		}
		if end {
			break
		}
		if wait != nil {
			<-wait
		}
	}
	runtime.ReadMemStats(&after)
	<-read
	if c.Pos != total {
		t.Fatalf("read %d of %d", c.Pos, total)
	}
	// Each read taking a fresh buffer allocates all of it (and more); with
	// recycling, what the pool misses (the race detector has it drop a
	// quarter of what it is given back, and a collection empties it) stays
	// well under that.
	got := after.TotalAlloc - before.TotalAlloc
	if got > total*3/4 {
		t.Fatalf("following %d MiB allocated %d MiB", total>>20, got>>20)
	}
	t.Logf("following %d MiB allocated %d MiB", total>>20, got>>20)
}

// TestFinishedOutputLeavesReadBuffers: once the output is complete, what a
// finished process keeps in memory is in slices of its own size, not in
// read buffers of a megabyte each (a process that wrote a little past its
// first full read kept one a whole retention period), and its bytes are
// unchanged.
func TestFinishedOutputLeavesReadBuffers(t *testing.T) {
	t.Parallel()
	b := testBudget(8<<20, 8<<20, 8<<20, 8<<20)
	l := New(b, filepath.Join(t.TempDir(), "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), (readMin+300)/16)
	go func() {
		defer w.Close()
		_, _ = w.Write(want[:readMin]) // fills the first buffer: bulk from here on
		_, _ = w.Write(want[readMin:])
	}()
	var draining atomic.Bool
	l.Fill(r, r.Read, Stdout, &draining, time.Second, nil)
	_ = r.Close()
	l.mu.Lock()
	pooled := 0
	for _, c := range l.mem {
		if c.buf != nil {
			pooled++
		}
	}
	l.mu.Unlock()
	if pooled == 0 {
		t.Fatal("the output never reached a read buffer: the test proves nothing")
	}
	l.Close()
	l.mu.Lock()
	for _, c := range l.mem {
		if c.buf != nil {
			t.Errorf("Chunk at %d (%d bytes) still in a read buffer after the end", c.Off, len(c.Data))
		}
	}
	l.mu.Unlock()
	got, _ := readAll(t, l, 0)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d, or other bytes", len(got), len(want))
	}
}

// TestSmallMemoryBoundHoldsForBulkReads: with a memory bound far below a
// read buffer, bulk output nobody follows keeps memory within the bound
// (the newest Chunk, which memory never lets go of, included), and what
// is kept when the output ends, before the disk catches up, is within the
// disk and memory bounds together.
func TestSmallMemoryBoundHoldsForBulkReads(t *testing.T) {
	t.Parallel()
	const memPer, diskPer, total = 64 << 10, 1 << 20, 6 << 20
	b := testBudget(memPer, 2*memPer, diskPer, 2*diskPer)
	l := New(b, filepath.Join(t.TempDir(), "p"))
	t.Cleanup(func() { l.Remove(); b.Wait() })
	r := feedPipe(t, total, 1<<20, func(int64, []byte) {})
	var draining atomic.Bool
	l.Fill(r, r.Read, Stdout, &draining, time.Second, nil)
	_ = r.Close()
	l.mu.Lock()
	mem, kept, end := l.memBytes, l.keptFrom(), l.total
	var largest int
	for _, c := range l.mem {
		largest = max(largest, len(c.Data))
	}
	l.mu.Unlock()
	l.Close()
	if end != total {
		t.Fatalf("read %d of %d", end, total)
	}
	if mem > memPer || largest > memPer/4 {
		t.Errorf("memory holds %d bytes (largest Chunk %d), bound %d", mem, largest, memPer)
	}
	if end-kept > diskPer+memPer {
		t.Errorf("%d bytes kept, bound %d on disk and %d in memory", end-kept, diskPer, memPer)
	}
}

// feedPipe answers the read end of a grown pipe into which a goroutine
// writes total bytes, size at a time, each filled by fill from its offset.
func feedPipe(t *testing.T, total int64, size int, fill func(off int64, p []byte)) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// a pipe as the process service grows its output pipes: a read
	// fills a whole recycled buffer
	if rc, err := w.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, ReadBufSize) })
	}
	go func() {
		defer w.Close()
		buf := make([]byte, size)
		for off := int64(0); off < total; {
			n := int(min(int64(len(buf)), total-off))
			fill(off, buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			off += int64(n)
		}
	}()
	return r
}
