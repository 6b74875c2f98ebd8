// Package journal owns the container's one journal: structured entries
// (time, source, level, message, fields) from every service, program and
// the supervisor, kept in the journal's own bbolt store with size and age
// retention, read the way journalctl reads (filters, opaque cursors,
// follow over Server-Sent Events, JSON lines or short text), and copied to
// systemd-journald when one runs.
//
// Writers never talk to the service directly: they call a contract.Journal,
// which the agent makes a Sink (sink.go). A Sink buffers in memory, bounded
// and without ever blocking its caller, and delivers to the journal service
// in the same process directly, or through the service's ingest socket
// <data>/journal/ingest.sock from any other process of the agent (isolated
// services, or the journal service itself isolated).
package journal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	clockpkg "deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Settings are the journal's flags.
type Settings struct {
	MaxBytes int64
	MaxAge   time.Duration
}

// Flags declares --journal-max-bytes and --journal-max-age.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.Int64Var(&s.MaxBytes, "journal-max-bytes", 128<<20, "the journal keeps at most this many bytes of entries; the oldest go first")
	fs.DurationVar(&s.MaxAge, "journal-max-age", 30*24*time.Hour, "the journal drops entries older than this (0: no age limit)")
}

// Validate checks the limits.
func (s *Settings) Validate() error {
	if s.MaxBytes < 1<<20 {
		return fmt.Errorf("--journal-max-bytes %d: must be at least 1048576 (1 MiB)", s.MaxBytes)
	}
	if s.MaxAge < 0 {
		return fmt.Errorf("--journal-max-age %s: must not be negative", s.MaxAge)
	}
	return nil
}

// How the writer batches: at most every commitInterval, or at once when
// batchMax entries wait; at most maxPending wait (more are dropped and
// counted).
const (
	commitInterval = 100 * time.Millisecond
	batchMax       = 4096
	maxPending     = 1 << 18
)

// Service is the journal service.
type Service struct {
	db    *store.DB
	set   Settings
	clock clockpkg.Clock
	log   *slog.Logger
	dir   string

	qmu     sync.Mutex
	queue   []pending
	dropped int64
	kick    chan struct{}
	flushes chan chan flushResult

	mu      sync.Mutex
	snap    snapshot
	changed chan struct{}

	// local is the Sink of this process, drained on flush.
	local   *Sink
	forward func(body, byte) // to systemd-journald, when it runs

	ingest *ingestServer
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

type flushResult struct {
	n   int
	err error
}

// New opens the journal, starts its writer and its ingest socket, and,
// when deps.Journal is this process's Sink, becomes its destination.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	if set == nil {
		set = &Settings{MaxBytes: 128 << 20, MaxAge: 30 * 24 * time.Hour}
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	deps = deps.WithDefaults()
	s := &Service{db: deps.Store, set: *set, clock: deps.Clock, log: deps.Logger, dir: deps.DataDir,
		kick: make(chan struct{}, 1), flushes: make(chan chan flushResult), changed: make(chan struct{})}
	err := s.db.Update(func(tx *store.Tx) error {
		st, err := loadState(tx)
		if err != nil {
			return err
		}
		s.snap = snapshot{id: st.ID, head: st.Head, oldest: st.Oldest, mark: st.Mark, maxLate: st.MaxLate}
		return tx.Put(bucketMeta, metaState, st)
	})
	if err != nil {
		return nil, fmt.Errorf("journal store %s: %w", s.db.Location(), err)
	}
	s.forward = journaldForwarder()
	s.ctx, s.stop = context.WithCancel(context.Background())
	if s.ingest, err = listenIngest(s, SocketPath(filepath.Dir(deps.DataDir))); err != nil {
		s.stop()
		return nil, err
	}
	s.wg.Go(s.writer)
	if sink, ok := deps.Journal.(*Sink); ok {
		s.local = sink
		sink.Attach(s)
	}
	return s, nil
}

// SocketPath is where the journal of an agent with data directory data
// takes entries from the agent's other processes.
func SocketPath(data string) string { return socketPath(filepath.Join(data, "journal", "ingest.sock")) }

// Ingest queues entries for the writer; it never blocks on the store.
// When more than maxPending wait, the rest are dropped and counted.
func (s *Service) Ingest(entries []contract.JournalEntry) error {
	now := s.clock.Now()
	s.qmu.Lock()
	for _, e := range entries {
		if len(s.queue) >= maxPending {
			s.dropped++
			continue
		}
		b, lv := normalize(e, now)
		s.queue = append(s.queue, pending{b, lv})
	}
	n := len(s.queue)
	s.qmu.Unlock()
	if n >= batchMax {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// writer commits queued entries in batches until the service closes, and
// applies age retention once a minute even when nothing is written.
func (s *Service) writer() {
	tick := time.NewTicker(commitInterval)
	defer tick.Stop()
	lastRetain := time.Now()
	for {
		var reply chan flushResult
		select {
		case <-s.ctx.Done():
			s.commit()
			return
		case <-tick.C:
		case <-s.kick:
		case reply = <-s.flushes:
		}
		n, err := s.commit()
		if reply != nil {
			reply <- flushResult{n, err}
		}
		if n == 0 && time.Since(lastRetain) > time.Minute {
			lastRetain = time.Now()
			_, _ = s.write(nil, 0)
		}
	}
}

// commit writes everything queued now; it answers how many entries.
func (s *Service) commit() (int, error) {
	total := 0
	for {
		s.qmu.Lock()
		batch, dropped := s.queue, s.dropped
		s.queue, s.dropped = nil, 0
		s.qmu.Unlock()
		if len(batch) == 0 && dropped == 0 {
			return total, nil
		}
		for len(batch) > 0 || dropped > 0 {
			part := batch[:min(len(batch), 1<<16)]
			batch = batch[len(part):]
			n, err := s.write(part, dropped)
			dropped = 0
			if err != nil {
				s.log.Warn("journal write failed; entries lost", "entries", len(part), "err", err)
				return total, err
			}
			total += n
			if s.forward != nil {
				for _, p := range part {
					s.forward(p.b, p.lv)
				}
			}
		}
	}
}

// Flushed is the answer of POST /api/v1/journal/flush.
type Flushed struct {
	Written int `json:"written" required:"true" doc:"entries this flush wrote to disk"`
}

// Flush delivers what this process's Sink holds and writes everything
// queued; it answers how many entries it wrote.
func (s *Service) Flush(ctx context.Context) (Flushed, error) {
	if s.local != nil {
		s.local.drainTo(s)
	}
	reply := make(chan flushResult, 1)
	select {
	case s.flushes <- reply:
	case <-ctx.Done():
		return Flushed{}, ctx.Err()
	case <-s.ctx.Done():
		return Flushed{}, fault.Errorf(fault.CodeUnavailable, "the journal is stopping")
	}
	r := <-reply
	if r.err != nil {
		return Flushed{}, fault.Internal("write the journal", r.err)
	}
	return Flushed{Written: r.n}, nil
}

// Close writes what is queued and stops the writer and the ingest socket.
// Entries a Sink still holds go to the log from then on.
func (s *Service) Close() error {
	if s.local != nil {
		s.local.Detach(s)
	}
	s.ingest.close()
	s.stop()
	s.wg.Wait()
	return nil
}

// Info titles the journal's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "journal",
		Title:   "deckhand journal",
		Version: platform.Version,
		Description: "The container's one journal, read as journalctl reads. Every service, program and the supervisor writes " +
			"structured entries (time, source, level, message, fields); they are kept in the journal's own store, the oldest " +
			"removed first beyond --journal-max-bytes or --journal-max-age, and copied to systemd-journald when its socket " +
			"exists. Levels are debug < info < warn < error; a level filter keeps that level and above. Cursors are opaque " +
			"positions: every entry has one, and the X-Journal-Cursor header of every answer is the position to pass back as " +
			"cursor= for the next page (the end of the journal when nothing matched). A cursor older than the oldest kept entry, " +
			"or from a wiped journal, resumes at the oldest entry and the answer says X-Journal-Gap: true. Errors are " +
			"{\"code\",\"details\",\"message\"}.",
	}
}

func (s *Service) pendingCount() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	n := len(s.queue)
	if s.local != nil {
		n += s.local.Buffered()
	}
	return n
}

func (s *Service) droppedCount() int64 {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	n := s.dropped
	if s.local != nil {
		n += s.local.Dropped()
	}
	return n
}

func (s *Service) fileBytes() int64 {
	st, err := os.Stat(filepath.Join(s.dir, "store.db"))
	if err != nil {
		return 0
	}
	return st.Size()
}
