package outlog

import (
	"os"
	"sync/atomic"
	"time"
)

// readMin is a reader's first buffer; reads go to recycled ReadBufSize
// buffers once one fills it, so a quiet process holds 64 KiB per stream,
// not 1 MiB.
const readMin = 64 << 10

// Fill reads f, with read (f's own Read, or a raw reader of it), into the
// log as stream's output until end of file or an error (EIO on a pty whose
// last holder closed it; a deadline). Once draining is set, each read
// waits at most drainWait. tee, when set, sees every read's bytes. Reads
// go to a small buffer, copied out, until one fills it; from then on
// (bulk output) into recycled pipe-sized buffers, each read's bytes a
// chunk (or the growth of the previous one) in place, a new buffer once
// less than an eighth of one is left.
func (l *Log) Fill(f *os.File, read func([]byte) (int, error), stream byte, draining *atomic.Bool, drainWait time.Duration,
	tee func(stream byte, p []byte)) {
	// No read is larger than a chunk may be: the log's memory bound
	// counts on it.
	most := l.b.chunkMax
	buf := make([]byte, min(readMin, most))
	var rb *readBuf // the reader's own hold while bulk
	used := 0       // bytes of rb handed to the log
	defer func() { rb.release() }()
	for {
		if draining.Load() {
			_ = f.SetReadDeadline(time.Now().Add(drainWait))
		}
		if rb != nil && len(rb.b)-used < len(rb.b)/8 {
			rb.release()
			rb, used = getReadBuf(), 0
		}
		into := buf
		if rb != nil {
			into = rb.b[used:min(len(rb.b), used+most)]
		}
		n, err := read(into)
		if n > 0 {
			if tee != nil {
				tee(stream, into[:n])
			}
			switch {
			case rb != nil:
				l.appendBuf(stream, rb, used, used+n)
				used += n
			case n == len(buf):
				l.Append(stream, buf, true)
				rb, used = getReadBuf(), 0
			default:
				l.Append(stream, buf[:n], false)
			}
		}
		if err != nil {
			return
		}
	}
}
