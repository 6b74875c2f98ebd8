package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"deckhand/platform/contract"
)

// Destination takes entries: the journal service in this process.
type Destination interface {
	Ingest(entries []contract.JournalEntry) error
}

// SinkConfig configures a Sink.
type SinkConfig struct {
	// Socket is the journal's ingest socket (SocketPath); "" means only a
	// journal in this process (Attach) takes the entries.
	Socket string
	// Capacity bounds the entries held while the journal is unreachable
	// (default 65536); past it entries are dropped and counted.
	Capacity int
	// Fallback takes what is still held when the sink closes (the log).
	Fallback contract.Journal
	// Logger is the process's log; its level also says whether debug
	// entries are kept: only when it logs debug (--log-level debug), so
	// per-request lines do not bury what a reader looks for.
	Logger *slog.Logger
}

// Sink is the contract.Journal every service, program and the supervisor
// writes to. Record never blocks: with the journal service in this
// process attached it hands the entry over at once (an append under a
// mutex); otherwise it keeps it in a bounded buffer that a goroutine sends
// in batches to the journal's ingest socket, retrying while the journal is
// not up yet. Entries that do not fit are counted, and the count is
// journaled once delivery works again.
type Sink struct {
	cfg    SinkConfig
	client *http.Client

	// delivering serialises the two ways entries leave the buffer (a
	// batch to the socket, a drain into the in-process journal when it
	// attaches), so a batch in flight is trimmed before anything else
	// takes from the buffer.
	delivering sync.Mutex

	mu      sync.Mutex
	buf     []contract.JournalEntry
	dropped int64
	dest    Destination

	// debug: debug entries are kept (the logger logs debug).
	debug bool

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// NewSink starts a sink.
func NewSink(cfg SinkConfig) *Sink {
	if cfg.Capacity <= 0 {
		cfg.Capacity = 1 << 16
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Fallback == nil {
		cfg.Fallback = contract.LogJournal{Logger: cfg.Logger}
	}
	s := &Sink{cfg: cfg, kick: make(chan struct{}, 1), done: make(chan struct{}),
		debug: cfg.Logger.Enabled(context.Background(), slog.LevelDebug)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Socket != "" {
		s.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy: nil, MaxIdleConnsPerHost: 1, IdleConnTimeout: 30 * time.Second,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", cfg.Socket)
			},
		}}
	}
	go s.run()
	return s
}

// Record takes one entry; it never waits for the journal. A debug entry
// is dropped unless the logger logs debug.
func (s *Sink) Record(e contract.JournalEntry) {
	if !s.debug && levelOf(e.Level) == 0 {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	s.mu.Lock()
	if d := s.dest; d != nil && len(s.buf) == 0 {
		s.mu.Unlock()
		_ = d.Ingest([]contract.JournalEntry{e})
		return
	}
	if len(s.buf) >= s.cfg.Capacity {
		s.dropped++
		s.mu.Unlock()
		return
	}
	s.buf = append(s.buf, e)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Dropped is how many entries did not fit so far (and were not reported yet).
func (s *Sink) Dropped() int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.dropped }

// Buffered is how many entries wait for delivery.
func (s *Sink) Buffered() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.buf) }

// Attach makes d (the journal service in this process) the destination
// and hands it what is buffered.
func (s *Sink) Attach(d Destination) {
	s.mu.Lock()
	s.dest = d
	s.mu.Unlock()
	s.drainTo(d)
}

// Detach stops delivering to d (it is closing).
func (s *Sink) Detach(d Destination) {
	s.mu.Lock()
	if s.dest == d {
		s.dest = nil
	}
	s.mu.Unlock()
}

// drainTo hands everything buffered (and the drop count) to d.
func (s *Sink) drainTo(d Destination) {
	s.delivering.Lock()
	defer s.delivering.Unlock()
	s.mu.Lock()
	batch, dropped := s.buf, s.dropped
	s.buf, s.dropped = nil, 0
	s.mu.Unlock()
	if dropped > 0 {
		batch = append(batch, dropEntry(dropped))
	}
	if len(batch) > 0 {
		_ = d.Ingest(batch)
	}
}

func dropEntry(n int64) contract.JournalEntry {
	return contract.JournalEntry{Time: time.Now().UTC(), Source: "journal", Level: "warn",
		Message: strconv.FormatInt(n, 10) + " journal entries were dropped: the writer's buffer was full",
		Fields:  map[string]any{"dropped": n}}
}

// run delivers buffered entries to the ingest socket in batches.
func (s *Sink) run() {
	defer close(s.done)
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-time.After(time.Second):
		}
		for s.ctx.Err() == nil {
			s.mu.Lock()
			d := s.dest
			s.mu.Unlock()
			if d != nil {
				s.drainTo(d)
				break
			}
			if s.client == nil || s.Buffered() == 0 && s.Dropped() == 0 {
				break
			}
			if err := s.sendBatch(s.ctx); err != nil {
				select {
				case <-s.ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, 2*time.Second)
				continue
			}
			backoff = 50 * time.Millisecond
		}
	}
}

// sendBatch posts up to 4096 buffered entries to the socket; on failure
// they go back to the front of the buffer.
func (s *Sink) sendBatch(ctx context.Context) error {
	s.delivering.Lock()
	defer s.delivering.Unlock()
	s.mu.Lock()
	n := min(len(s.buf), 4096)
	batch := append([]contract.JournalEntry(nil), s.buf[:n]...)
	dropped := s.dropped
	s.mu.Unlock()
	if dropped > 0 {
		batch = append(batch, dropEntry(dropped))
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, e := range batch {
		if err := enc.Encode(e); err != nil {
			e.Fields = map[string]any{"fields_error": err.Error()}
			_ = enc.Encode(e)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://journal/ingest", &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("journal ingest answered %d", resp.StatusCode)
	}
	s.mu.Lock()
	s.buf = s.buf[n:]
	if len(s.buf) == 0 {
		s.buf = nil
	}
	s.dropped -= dropped
	s.mu.Unlock()
	return nil
}

// Close delivers what it can within a second, then writes what is left
// to the fallback (the log), so nothing is lost silently at shutdown.
func (s *Sink) Close() error {
	deadline, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.cancel()
	<-s.done
	for s.client != nil && s.Buffered() > 0 && deadline.Err() == nil {
		if s.sendBatch(deadline) != nil {
			break
		}
	}
	s.mu.Lock()
	left, dropped := s.buf, s.dropped
	s.buf, s.dropped = nil, 0
	d := s.dest
	s.mu.Unlock()
	if dropped > 0 {
		left = append(left, dropEntry(dropped))
	}
	if d != nil {
		return d.Ingest(left)
	}
	for _, e := range left {
		s.cfg.Fallback.Record(e)
	}
	return nil
}
