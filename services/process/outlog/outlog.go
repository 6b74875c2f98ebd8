// Package outlog owns a process's output log, the engine the process
// service keeps output in. Output is kept per process as one ordered sequence of bytes from both
// streams, in the order the service read them; a byte's offset is its
// position in it. The newest bytes are chunks in memory. A spiller
// goroutine per process writes them, oldest first, to segment files on
// disk once memory is half full, at the disk's pace, never in the way of
// reading the process's pipes. What is kept is bounded per process and in
// total, in memory and on disk (Budget); beyond the bounds the oldest bytes
// go first, and a reader that asks for them is told what it missed (Gap).
// When output comes faster than the disk takes it, memory's oldest chunks
// go unwritten (the disk then starts over from what memory holds), unless a
// follower still needs them.
//
// Followers hold their place: while a follower is connected, or for the
// resume grace after it disconnects, the reader of the process's pipes
// stops taking output once it is too far ahead of the slowest follower
// (lead: half of memory for a connected follower, which so reads from
// memory, never from the disk; holdLimit, half the disk bound, for the
// place of one that disconnected), and bytes a follower has not read, or
// may not have received (inFlight, a quarter of the disk bound, before its
// place), leave memory only once they are on disk. Within the disk bound
// the oldest segment goes, so holdLimit + inFlight + a segment fit it. The
// process then waits on its pipe (as it would writing to a slow terminal)
// instead of a follower losing bytes.
package outlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// Stdout and Stderr are a chunk's stream.
	Stdout byte = 1
	Stderr byte = 2

	// coalesceMax: small reads of one stream join the previous Chunk up to
	// this size, so line-by-line output does not cost a Chunk per line.
	coalesceMax = 64 << 10
	// indexEvery: a segment remembers where a frame starts at least every
	// this many bytes of file, so a reader seeks to an offset reading at
	// most this much more.
	indexEvery = 64 << 10
	// frameHeader is a segment frame's header: stream, then length (LE32).
	frameHeader = 5
	// finishedMemory: what a finished process may keep in memory; more
	// goes to disk when it ends.
	finishedMemory = 64 << 10
	// spillBatch: the most the spiller writes between two looks at memory.
	spillBatch = 4 << 20
)

// StreamName is a stream's name in the API: stdout or stderr.
func StreamName(s byte) string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Gap is output a reader asked for that is no longer kept: [From, To).
type Gap struct{ From, To int64 }

// Chunk is bytes of one stream (Stdout or Stderr) from offset Off. Its
// bytes never change while anyone holds them: appends only ever add past a
// slice's length, and a recycled read buffer (buf) is reused only once
// every holder let go of it.
type Chunk struct {
	Off    int64
	Stream byte
	Data   []byte
	buf    *readBuf // nil: an ordinary slice, left to the GC
}

// readBuf is a bulk read buffer of a process's pipe that became a Chunk.
// Its holders are the log's memory, the spiller writing it and cursors
// that answered pieces of it; the last to let go puts it back in
// readBufs. Reusing them spares a pipe at full speed a fresh megabyte
// (zeroed, faulted in, then collected) per read.
type readBuf struct {
	b    []byte
	refs atomic.Int32
}

// ReadBufSize is the size of a recycled read buffer.
const ReadBufSize = 1 << 20

var readBufs = sync.Pool{New: func() any { return &readBuf{b: make([]byte, ReadBufSize)} }}

// getReadBuf answers a buffer with one holder: the caller.
func getReadBuf() *readBuf {
	rb := readBufs.Get().(*readBuf)
	rb.refs.Store(1)
	return rb
}

func (rb *readBuf) hold() {
	if rb != nil {
		rb.refs.Add(1)
	}
}

func (rb *readBuf) release() {
	if rb == nil {
		return
	}
	switch n := rb.refs.Add(-1); {
	case n == 0:
		readBufs.Put(rb)
	case n < 0:
		panic("process: read buffer released more often than held")
	}
}

// releaseChunks lets go of the log's hold on chunks leaving memory.
func releaseChunks(cs []Chunk) {
	for _, c := range cs {
		c.buf.release()
	}
}

func (c Chunk) end() int64 { return c.Off + int64(len(c.Data)) }

// segment is a file of frames holding offsets [start, end).
type segment struct {
	log        *Log
	path       string
	start, end int64 // under log.mu
	size       int64 // bytes written and flushed, under log.mu
	index      []segIndex
	sealed     atomic.Bool // no longer written
	dropped    atomic.Bool
}

type segIndex struct{ Off, Pos int64 }

// Budget is the service-wide bound on kept output.
type Budget struct {
	memPer, memTotal   int64
	diskPer, diskTotal int64
	segSize            int64
	// chunkMax bounds one Chunk (a read, or reads joined): memory never
	// lets go of the newest Chunk, so it must fit the memory bound with
	// room to spare, however small the bound and however large a read.
	chunkMax int
	coalesce int // coalesceMax within chunkMax
	// connLead is how far the output may get ahead of a connected
	// follower: within what memory holds, where it reads without touching
	// the disk. The place of one that disconnected holds holdLimit.
	connLead  int64
	holdLimit int64
	// inFlight is how far before a follower's place bytes stay needed:
	// what it was sent but had not received when its connection dropped
	// (socket buffers on both ends, the gateway's) is asked for again.
	inFlight int64
	grace    time.Duration
	log      *slog.Logger

	mem, disk atomic.Int64
	spillers  sync.WaitGroup // Close waits for them

	mu   sync.Mutex
	fifo []*segment // every segment on disk, oldest first
}

// Limits are the bounds on kept output: per process and for all together,
// in memory and on disk, and how long a follower that disconnected keeps
// its place.
type Limits struct {
	Memory, MemoryTotal int64
	Disk, DiskTotal     int64
	ResumeGrace         time.Duration
}

// NewBudget is the service-wide bound for set; log is told when output
// cannot go to disk.
func NewBudget(set Limits, log *slog.Logger) *Budget {
	seg := min(max(set.Disk/8, 64<<10), 8<<20)
	chunkMax := int(min(ReadBufSize, set.Memory/4))
	return &Budget{memPer: set.Memory, memTotal: set.MemoryTotal, diskPer: set.Disk,
		diskTotal: set.DiskTotal, segSize: seg, chunkMax: chunkMax, coalesce: min(coalesceMax, chunkMax),
		connLead: min(set.Memory/2, set.Disk/2), holdLimit: set.Disk / 2, inFlight: set.Disk / 4,
		grace: set.ResumeGrace, log: log}
}

// Wait returns once every log's spiller has ended (each log closed or
// aborted).
func (b *Budget) Wait() { b.spillers.Wait() }

func (b *Budget) add(s *segment) {
	b.mu.Lock()
	b.fifo = append(b.fifo, s)
	b.mu.Unlock()
}

// reclaim drops the oldest sealed segments, whoever's, while the disk in
// total is over its bound.
func (b *Budget) reclaim() {
	for b.disk.Load() > b.diskTotal {
		b.mu.Lock()
		var victim *segment
		b.fifo = slices.DeleteFunc(b.fifo, func(s *segment) bool {
			if victim == nil && !s.dropped.Load() && s.sealed.Load() {
				victim = s
			}
			return victim == s || s.dropped.Load()
		})
		b.mu.Unlock()
		if victim == nil {
			return
		}
		victim.log.dropSegment(victim)
	}
}

// Hold is a follower's place.
type Hold struct {
	Pos       int64
	lingering bool
	expires   time.Time
}

// Log is one process's output.
type Log struct {
	b      *Budget
	prefix string // segment files are prefix.N

	mu        sync.Mutex
	mem       []Chunk // [memStart, total)
	memBytes  int64
	segs      []*segment // [segs[0].start, diskEnd), contiguous; diskEnd >= memStart while any
	diskBytes int64
	diskEnd   int64 // where the spiller writes next
	gen       int   // bumped when the disk is dropped whole: a write in flight is stale
	total     int64 // next offset
	counts    [3]int64
	closed    bool // every byte is in
	removed   bool
	spillErr  bool
	spilling  bool // the spiller goroutine runs
	starved   bool // an append waits for the spiller
	// spare is the file of the segment the disk bound dropped last, kept
	// for the next segment: overwriting its pages costs the file system
	// far less than a new file and an unlink.
	spare     string
	spareSize int64
	wake      chan struct{} // closed at every append and at close
	spilled   chan struct{} // closed when diskEnd moves or spilling fails
	kick      chan struct{} // wakes the spiller
	holds     map[*Hold]struct{}
	holdWake  chan struct{}

	wmu sync.Mutex // appends, one at a time

	// The spiller's own: the segment it writes.
	cur  *segment
	f    *os.File
	bw   *bufio.Writer
	nseg int

	abort    chan struct{}
	abortOne sync.Once
}

// New is an empty log whose segment files are prefix.N.
func New(b *Budget, prefix string) *Log {
	return &Log{b: b, prefix: prefix, wake: make(chan struct{}), spilled: make(chan struct{}), kick: make(chan struct{}, 1),
		holds: map[*Hold]struct{}{}, abort: make(chan struct{})}
}

// Restored is the log of a process from before a restart: its output is
// gone, its counts are what its record says.
func Restored(b *Budget, stdout, stderr, total int64) *Log {
	l := New(b, "")
	l.diskEnd, l.total, l.closed = total, total, true
	l.counts[Stdout], l.counts[Stderr] = stdout, stderr
	return l
}

// Stats are the record's output fields.
func (l *Log) Stats() (stdout, stderr, total, keptFrom int64, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[Stdout], l.counts[Stderr], l.total, l.keptFrom(), l.closed
}

func (l *Log) memStart() int64 {
	if len(l.mem) == 0 {
		return l.total
	}
	return l.mem[0].Off
}

// keptFrom is the oldest offset kept; the caller holds mu.
func (l *Log) keptFrom() int64 {
	ms := l.memStart()
	if len(l.segs) > 0 && l.segs[0].start < ms {
		return l.segs[0].start
	}
	return ms
}

// Append adds p to stream's output. With owned, p is the caller's to give
// away (a read buffer it will not reuse) and becomes a Chunk as it is.
func (l *Log) Append(stream byte, p []byte, owned bool) { l.add(stream, p, owned, nil) }

// appendBuf adds rb's bytes [from, to) to stream's output; the log takes
// a hold of its own on rb. Bytes that follow the newest Chunk in the same
// buffer, of the same stream, extend it. A Chunk of a read buffer is never
// appended to by copying: the space past it is where the next read goes.
func (l *Log) appendBuf(stream byte, rb *readBuf, from, to int) {
	rb.hold()
	l.add(stream, rb.b[from:to], true, rb)
}

func (l *Log) add(stream byte, p []byte, owned bool, rb *readBuf) {
	if len(p) == 0 {
		rb.release()
		return
	}
	n := int64(len(p))
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.waitHolds(n)
	l.mu.Lock()
	if l.removed || l.closed {
		l.mu.Unlock()
		rb.release()
		return
	}
	if k := len(l.mem) - 1; rb != nil && k >= 0 && l.mem[k].buf == rb && l.mem[k].Stream == stream &&
		len(l.mem[k].Data)+len(p) <= l.b.chunkMax && follows(l.mem[k].Data, p) {
		last := &l.mem[k]
		last.Data = last.Data[:len(last.Data)+len(p)]
		rb.release() // the Chunk's hold covers it
	} else if k >= 0 && l.mem[k].buf == nil && l.mem[k].Stream == stream && len(l.mem[k].Data)+len(p) <= l.b.coalesce {
		last := &l.mem[k]
		if cap(last.Data)-len(last.Data) < len(p) {
			grown := make([]byte, len(last.Data), min(max(2*cap(last.Data), len(last.Data)+len(p)), l.b.coalesce))
			copy(grown, last.Data)
			last.Data = grown
		}
		last.Data = append(last.Data, p...)
		rb.release() // copied
	} else {
		data := p
		if !owned {
			data = make([]byte, len(p), max(len(p), min(4<<10, l.b.coalesce)))
			copy(data, p)
		}
		l.mem = append(l.mem, Chunk{Off: l.total, Stream: stream, Data: data, buf: rb})
	}
	l.total += n
	l.counts[stream] += n
	l.memBytes += n
	l.b.mem.Add(n)
	wake := l.wake
	l.wake = make(chan struct{})
	l.mu.Unlock()
	close(wake)
	l.shrink()
}

// follows reports whether p starts where a ends, in a's array.
func follows(a, p []byte) bool {
	n := len(a)
	return n < cap(a) && len(p) <= cap(a)-n && &a[:n+1][n] == &p[0]
}

// shrink keeps memory within its bounds: the oldest chunks leave once on
// disk, or unwritten when no follower needs them; one a follower needs is
// waited for. The spiller starts once memory is half full. The caller
// holds wmu.
func (l *Log) shrink() {
	for {
		l.mu.Lock()
		if l.removed {
			l.mu.Unlock()
			return
		}
		if l.memBytes > l.b.memPer/2 {
			l.startSpiller()
		}
		target := l.b.memPer
		if l.b.mem.Load() > l.b.memTotal {
			target = min(target, finishedMemory)
		}
		wait := l.evict(target)
		l.starved = wait != nil
		if l.starved {
			l.startSpiller() // it writes what the append waits for
		}
		l.mu.Unlock()
		if wait == nil {
			return
		}
		select {
		case <-wait:
		case <-l.abort:
			return
		}
	}
}

// evict drops the oldest chunks while memory is over target, never the
// newest (the end of the output always stays readable); it answers a
// channel to wait on when the oldest is not on disk yet and a follower
// needs it. The caller holds mu.
func (l *Log) evict(target int64) <-chan struct{} {
	var freed int64
	i := 0
	for ; i < len(l.mem)-1 && l.memBytes-freed > target; i++ {
		c := l.mem[i]
		if c.end() > l.diskEnd && !l.spillErr && l.needed(c.end()) {
			break
		}
		freed += int64(len(c.Data))
	}
	if i > 0 {
		l.dropFront(i, freed)
		l.restartDisk()
	}
	if l.memBytes > target && len(l.mem) > 1 {
		return l.spilled
	}
	return nil
}

// needed reports whether a follower may still need bytes before off: its
// place, less what may have been in flight, is before off. The caller
// holds mu.
func (l *Log) needed(off int64) bool {
	now := time.Now()
	for h := range l.holds {
		if h.lingering && !now.Before(h.expires) {
			continue
		}
		if h.Pos-l.b.inFlight < off {
			return true
		}
	}
	return false
}

// waitHolds waits while taking n more bytes would put the output further
// ahead of a follower's place than its lead. The caller holds wmu.
func (l *Log) waitHolds(n int64) {
	for {
		l.mu.Lock()
		now := time.Now()
		ahead := false
		var next time.Time
		for h := range l.holds {
			if h.lingering && !now.Before(h.expires) {
				delete(l.holds, h)
				continue
			}
			if h.lingering && (next.IsZero() || h.expires.Before(next)) {
				next = h.expires
			}
			if h.Pos < l.total && l.total+n-h.Pos > l.lead(h) {
				ahead = true
			}
		}
		if !ahead || l.removed {
			l.mu.Unlock()
			return
		}
		if l.holdWake == nil {
			l.holdWake = make(chan struct{})
		}
		ch := l.holdWake
		l.mu.Unlock()
		var expire <-chan time.Time
		if !next.IsZero() {
			expire = time.After(time.Until(next))
		}
		select {
		case <-ch:
		case <-expire:
		case <-l.abort:
			return
		}
	}
}

// lead is how far the output may get ahead of a follower's place.
func (l *Log) lead(h *Hold) int64 {
	if h.lingering {
		return l.b.holdLimit
	}
	return l.b.connLead
}

// wakeHolders wakes an append waiting on the holds; the caller holds mu.
func (l *Log) wakeHolders() {
	if l.holdWake != nil {
		close(l.holdWake)
		l.holdWake = nil
	}
	l.spilledMoved() // an append waiting to evict may now go ahead
}

// spilledMoved wakes appends waiting on the spiller; the caller holds mu.
func (l *Log) spilledMoved() {
	close(l.spilled)
	l.spilled = make(chan struct{})
}

// startSpiller runs the spiller unless it runs; the caller holds mu.
func (l *Log) startSpiller() {
	if l.spilling || l.removed || l.spillErr {
		select {
		case l.kick <- struct{}{}:
		default:
		}
		return
	}
	l.spilling = true
	l.b.spillers.Go(l.spill)
}

// spill writes memory to disk, oldest first, while memory is more than
// half full (at the end: more than a finished process keeps), then, once
// the output is complete and written, lets memory go down to that.
func (l *Log) spill() {
	defer func() {
		l.seal()
		l.mu.Lock()
		l.dropSpare()
		l.mu.Unlock()
	}()
	for {
		l.mu.Lock()
		aborted := false
		select {
		case <-l.abort:
			aborted = true
		default:
		}
		if l.removed || l.spillErr || aborted {
			l.spilling = false
			l.mu.Unlock()
			return
		}
		l.restartDisk()
		limit := l.b.memPer / 2
		if l.closed {
			limit = finishedMemory
		}
		var batch []Chunk
		if l.memBytes > limit || l.starved {
			n := 0
			i := sort.Search(len(l.mem), func(i int) bool { return l.mem[i].end() > l.diskEnd })
			for ; i < len(l.mem) && n < spillBatch; i++ {
				c := l.mem[i]
				if c.Off < l.diskEnd {
					c = Chunk{Off: l.diskEnd, Stream: c.Stream, Data: c.Data[l.diskEnd-c.Off:]}
				}
				c.buf.hold() // written outside the lock, while memory may let it go
				batch = append(batch, c)
				n += len(c.Data)
			}
		}
		if len(batch) == 0 {
			if l.closed {
				l.settle()
				l.spilling = false
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			select {
			case <-l.kick:
			case <-l.abort: // the next look ends it
			}
			continue
		}
		gen := l.gen
		l.mu.Unlock()
		err := l.writeFrames(batch, gen)
		releaseChunks(batch)
		if err != nil && !errors.Is(err, errStale) {
			l.b.log.Error("process: output cannot spill to disk; the oldest output is dropped instead", "file", l.prefix, "err", err)
			l.mu.Lock()
			l.spillErr = true
			l.dropAllSegments()
			l.spilledMoved()
			l.spilling = false
			l.mu.Unlock()
			return
		}
		l.b.reclaim()
	}
}

// settle lets a finished process's memory go down to finishedMemory: what
// leaves is on disk. The caller holds mu.
func (l *Log) settle() {
	var freed int64
	i := 0
	for ; i < len(l.mem)-1 && l.memBytes-freed > finishedMemory && l.mem[i].end() <= l.diskEnd; i++ {
		freed += int64(len(l.mem[i].Data))
	}
	l.dropFront(i, freed)
}

// dropFront lets the oldest i chunks, freed bytes in all, leave memory;
// the caller holds mu.
func (l *Log) dropFront(i int, freed int64) {
	releaseChunks(l.mem[:i])
	l.mem = slices.Delete(l.mem, 0, i)
	l.memBytes -= freed
	l.b.mem.Add(-freed)
}

// restartDisk drops the disk when memory no longer starts within it:
// bytes went unwritten, so what is on disk is not contiguous with memory.
// The disk starts over from memory; the caller holds mu.
func (l *Log) restartDisk() {
	if ms := l.memStart(); l.diskEnd < ms {
		l.dropAllSegments()
		l.diskEnd = ms
		l.gen++
	}
}

var errStale = errors.New("the disk was dropped meanwhile")

// writeFrames appends chunks to the segments, cutting them into frames so
// that no segment grows past segSize (the bounds drop whole segments) and
// so that a cut falls between characters of UTF-8 text, and commits each
// segment's new end once its frames are flushed. The chunks stay in memory
// meanwhile, where readers find them. Only the spiller calls it.
func (l *Log) writeFrames(batch []Chunk, gen int) error {
	var hdr [frameHeader]byte
	var pend struct {
		size, end int64
		index     []segIndex
	}
	commit := func() error {
		if l.cur == nil || pend.size == 0 {
			return nil
		}
		if err := l.bw.Flush(); err != nil {
			return err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.gen != gen || l.cur.dropped.Load() {
			return errStale
		}
		l.cur.size += pend.size
		l.cur.end = pend.end
		l.cur.index = append(l.cur.index, pend.index...)
		l.diskBytes += pend.size
		l.b.disk.Add(pend.size)
		l.diskEnd = pend.end
		pend.size, pend.index = 0, nil
		for l.diskBytes > l.b.diskPer && len(l.segs) > 1 {
			l.recycle()
		}
		l.spilledMoved()
		return nil
	}
	lastIdx := int64(-indexEvery)
	if l.cur != nil && len(l.cur.index) > 0 {
		lastIdx = l.cur.index[len(l.cur.index)-1].Pos
	}
	for _, c := range batch {
		off, data := c.Off, c.Data
		for len(data) > 0 {
			if l.cur == nil || l.cur.dropped.Load() || l.cur.size+pend.size+frameHeader >= l.b.segSize {
				if err := commit(); err != nil {
					return err
				}
				if err := l.rotate(off, gen); err != nil {
					return err
				}
				lastIdx = -indexEvery
			}
			pos := l.cur.size + pend.size
			n := int(min(int64(len(data)), l.b.segSize-pos-frameHeader))
			if n < len(data) {
				n = runeCut(data, n)
			}
			if pos-lastIdx >= indexEvery {
				pend.index = append(pend.index, segIndex{Off: off, Pos: pos})
				lastIdx = pos
			}
			hdr[0] = c.Stream
			binary.LittleEndian.PutUint32(hdr[1:], uint32(n))
			if _, err := l.bw.Write(hdr[:]); err != nil {
				return err
			}
			if _, err := l.bw.Write(data[:n]); err != nil {
				return err
			}
			pend.size += frameHeader + int64(n)
			off += int64(n)
			pend.end = off
			data = data[n:]
		}
	}
	return commit()
}

// runeCut moves a cut at n back to the start of a UTF-8 sequence (at most
// three bytes), so text cut between two segments reads as text; binary
// bytes are cut wherever.
func runeCut(b []byte, n int) int {
	for k := 0; k < 3 && n-k > 1; k++ {
		if b[n-k]&0xC0 != 0x80 {
			return n - k
		}
	}
	return n
}

// rotate seals the current segment and opens the next, starting at off.
// Only the spiller calls it.
func (l *Log) rotate(off int64, gen int) error {
	l.seal()
	l.mu.Lock()
	path, reused := l.spare, l.spare != ""
	if reused {
		l.b.disk.Add(-l.spareSize)
		l.spare, l.spareSize = "", 0
	}
	l.mu.Unlock()
	flags := os.O_WRONLY
	if !reused {
		l.nseg++
		path = l.prefix + "." + strconv.Itoa(l.nseg)
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return err
	}
	seg := &segment{log: l, path: path, start: off, end: off}
	l.mu.Lock()
	if l.gen != gen || l.removed {
		l.mu.Unlock()
		_ = f.Close()
		_ = os.Remove(path)
		return errStale
	}
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	l.cur, l.f = seg, f
	if l.bw == nil {
		l.bw = bufio.NewWriterSize(f, 64<<10)
	} else {
		l.bw.Reset(f)
	}
	l.b.add(seg)
	return nil
}

// seal closes the segment being written. Only the spiller calls it.
func (l *Log) seal() {
	if l.cur == nil {
		return
	}
	_ = l.bw.Flush()
	_ = l.f.Close()
	l.cur.sealed.Store(true)
	l.cur, l.f = nil, nil
}

// dropOldest removes the oldest segment; the caller holds mu.
func (l *Log) dropOldest() {
	s := l.segs[0]
	l.segs = l.segs[1:]
	l.forget(s)
}

func (l *Log) forget(s *segment) {
	if s.dropped.Swap(true) {
		return
	}
	l.diskBytes -= s.size
	l.b.disk.Add(-s.size)
	_ = os.Remove(s.path)
}

// recycle drops the oldest segment for the disk bound, keeping its file
// as the spare; the caller (the spiller) holds mu.
func (l *Log) recycle() {
	s := l.segs[0]
	if l.spare != "" || l.closed || l.removed || !s.sealed.Load() || s.dropped.Load() {
		l.dropOldest()
		return
	}
	l.segs = l.segs[1:]
	s.dropped.Store(true)
	l.diskBytes -= s.size
	l.spare, l.spareSize = s.path, s.size // still on disk: b.disk keeps counting it
}

// dropSpare removes the spare file; the caller holds mu.
func (l *Log) dropSpare() {
	if l.spare != "" {
		_ = os.Remove(l.spare)
		l.b.disk.Add(-l.spareSize)
		l.spare, l.spareSize = "", 0
	}
}

func (l *Log) dropAllSegments() {
	for _, s := range l.segs {
		l.forget(s)
	}
	l.segs = nil
}

// dropSegment removes s when it is still this log's oldest (the global
// bound's reclaim).
func (l *Log) dropSegment(s *segment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) > 0 && l.segs[0] == s {
		l.dropOldest()
	}
}

// Close marks the output complete: wakes followers, and has the spiller
// write what a finished process may not keep in memory.
func (l *Log) Close() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	// A finished process keeps its newest chunks for as long as it is
	// retained: they move from read buffers (a megabyte each, however
	// little of one they use) to slices of their own size.
	for i := range l.mem {
		if c := &l.mem[i]; c.buf != nil {
			c.Data = bytes.Clone(c.Data)
			c.buf.release()
			c.buf = nil
		}
	}
	wake := l.wake
	l.wake = make(chan struct{})
	if l.memBytes > finishedMemory || l.spilling {
		l.startSpiller()
	}
	l.mu.Unlock()
	close(wake)
}

// Remove deletes everything kept (retention) and ends every follower.
func (l *Log) Remove() {
	l.AbortAll()
	l.mu.Lock()
	l.removed = true
	l.dropAllSegments()
	if !l.spilling {
		l.dropSpare()
	}
	l.dropFront(len(l.mem), l.memBytes)
	l.diskEnd = l.total
	wake := l.wake
	l.wake = make(chan struct{})
	l.spilledMoved()
	l.mu.Unlock()
	close(wake)
}

// AbortAll stops waiting on holds and the spiller (the service is
// stopping, or the log goes).
func (l *Log) AbortAll() { l.abortOne.Do(func() { close(l.abort) }) }

// AddHold registers a follower's place at pos. A hold a follower left when
// it disconnected, at or past pos, is taken over: that is most likely the
// same client resuming.
func (l *Log) AddHold(pos int64) *Hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	var prev *Hold
	for h := range l.holds {
		if h.lingering && h.Pos >= pos && (prev == nil || h.Pos < prev.Pos) {
			prev = h
		}
	}
	if prev != nil {
		delete(l.holds, prev)
	}
	h := &Hold{Pos: pos}
	l.holds[h] = struct{}{}
	l.wakeHolders()
	return h
}

// MoveHold records that a follower has sent everything before pos.
func (l *Log) MoveHold(h *Hold, pos int64) {
	l.mu.Lock()
	if pos > h.Pos {
		h.Pos = pos
		l.wakeHolders()
	}
	l.mu.Unlock()
}

// ReleaseHold keeps a disconnected follower's place for the resume grace.
func (l *Log) ReleaseHold(h *Hold) {
	l.mu.Lock()
	if _, ok := l.holds[h]; ok {
		if l.closed || l.b.grace <= 0 {
			delete(l.holds, h)
		} else {
			h.lingering, h.expires = true, time.Now().Add(l.b.grace)
		}
	}
	l.wakeHolders()
	l.mu.Unlock()
}

// Cursor is a reader's position in a log: Pos is the next offset it reads.
type Cursor struct {
	l    *Log
	Pos  int64
	f    *os.File
	fseg *segment
	buf  []byte
	held []*readBuf // under the pieces last answered
}

// letGo releases the read buffers under the pieces last answered.
func (c *Cursor) letGo() {
	for i, rb := range c.held {
		rb.release()
		c.held[i] = nil
	}
	c.held = c.held[:0]
}

// Cursor is a new reader at pos.
func (l *Log) Cursor(pos int64) *Cursor { return &Cursor{l: l, Pos: pos} }

// AtEnd reports whether the cursor has read all of a complete output.
func (c *Cursor) AtEnd() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.l.closed && c.Pos >= c.l.total
}

// CaughtUp reports whether the cursor has read everything so far of an
// output still growing.
func (c *Cursor) CaughtUp() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return !c.l.closed && c.Pos >= c.l.total
}

// WaitMore answers a channel closed at the next change, or nil when the
// output already goes past upto or is complete.
func (c *Cursor) WaitMore(upto int64) <-chan struct{} {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.l.closed || c.l.removed || c.l.total > upto {
		return nil
	}
	return c.l.wake
}

// Close lets go of what the cursor holds: the pieces last answered, an
// open segment file.
func (c *Cursor) Close() {
	c.letGo()
	if c.f != nil {
		_ = c.f.Close()
		c.f, c.fseg = nil, nil
	}
}

// Next answers up to max bytes at the cursor (pieces valid until the next
// call or close), a gap when the cursor was before the oldest kept byte,
// and else done (the output is complete and all read) or a channel closed
// when there is more.
func (c *Cursor) Next(max int) (pieces []Chunk, gap *Gap, done bool, wait <-chan struct{}) {
	l := c.l
	c.letGo()
	for {
		l.mu.Lock()
		if start := l.keptFrom(); c.Pos < start {
			gap = &Gap{From: c.Pos, To: start}
			c.Pos = start
		}
		ms := l.memStart()
		switch {
		case c.Pos < ms:
			i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].end > c.Pos })
			if i == len(l.segs) || l.segs[i].start > c.Pos {
				// Segments are contiguous up to memory; never here, but
				// a reader must not spin if they were not.
				to := ms
				if i < len(l.segs) {
					to = l.segs[i].start
				}
				l.mu.Unlock()
				gap = &Gap{From: c.Pos, To: to}
				c.Pos = to
				return nil, gap, false, nil
			}
			s := l.segs[i]
			ix := sort.Search(len(s.index), func(j int) bool { return s.index[j].Off > c.Pos }) - 1
			from := segIndex{Off: s.start}
			if ix >= 0 {
				from = s.index[ix]
			}
			end, size := s.end, s.size
			l.mu.Unlock()
			p, err := c.readDisk(s, from, end, size, max)
			if err != nil {
				c.Close()
				if s.dropped.Load() {
					continue // dropped meanwhile: the next look reports the gap
				}
				// Damaged or unreadable: skip what it held.
				gap = &Gap{From: c.Pos, To: end}
				c.Pos = end
				return nil, gap, false, nil
			}
			return p, gap, false, nil
		case c.Pos < l.total:
			i := sort.Search(len(l.mem), func(i int) bool { return l.mem[i].end() > c.Pos })
			n := 0
			for ; i < len(l.mem) && n < max; i++ {
				ch := l.mem[i]
				d := ch.Data[c.Pos-ch.Off:]
				if n+len(d) > max {
					d = d[:max-n]
				}
				if ch.buf != nil {
					ch.buf.hold()
					c.held = append(c.held, ch.buf)
				}
				pieces = append(pieces, Chunk{Off: c.Pos, Stream: ch.Stream, Data: d})
				c.Pos += int64(len(d))
				n += len(d)
			}
			l.mu.Unlock()
			return pieces, gap, false, nil
		case l.closed || l.removed:
			l.mu.Unlock()
			return nil, gap, true, nil
		}
		wait = l.wake
		l.mu.Unlock()
		return nil, gap, false, wait
	}
}

var errSegment = errors.New("process: segment file is damaged")

// readDisk reads frames of s from the indexed frame at from up to end,
// answering the bytes from the cursor on, at most max of them.
func (c *Cursor) readDisk(s *segment, from segIndex, end, size int64, max int) ([]Chunk, error) {
	if c.fseg != s {
		c.Close()
		f, err := os.Open(s.path)
		if err != nil {
			return nil, err
		}
		c.f, c.fseg = f, s
	}
	want := int(min(int64(max), end-c.Pos))
	need := int(min(c.Pos-from.Off+int64(want)+frameHeader*16+indexEvery, size-from.Pos))
	for {
		if cap(c.buf) < need {
			c.buf = make([]byte, need)
		}
		buf := c.buf[:need]
		n, err := c.f.ReadAt(buf, from.Pos)
		if n < need && err != nil {
			return nil, err
		}
		if s.dropped.Load() {
			// Dropped while read, so perhaps rewritten as a new segment:
			// what was read may not be this segment's.
			return nil, errSegment
		}
		var out []Chunk
		off, p, got := from.Off, 0, 0
		for p+frameHeader <= n && got < want {
			st := buf[p]
			ln := int(binary.LittleEndian.Uint32(buf[p+1:]))
			if st != Stdout && st != Stderr {
				return nil, errSegment
			}
			if p+frameHeader+ln > n {
				break
			}
			fend := off + int64(ln)
			if fend > c.Pos {
				d := buf[p+frameHeader+int(c.Pos-off) : p+frameHeader+ln]
				if got+len(d) > want {
					d = d[:want-got]
				}
				out = append(out, Chunk{Off: c.Pos, Stream: st, Data: d})
				c.Pos += int64(len(d))
				got += len(d)
			}
			off = fend
			p += frameHeader + ln
		}
		if len(out) > 0 {
			return out, nil
		}
		if int64(need) >= size-from.Pos {
			return nil, errSegment
		}
		need = int(min(int64(need)*2, size-from.Pos))
	}
}
