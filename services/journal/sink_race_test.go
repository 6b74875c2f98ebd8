package journal_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"deckhand/platform/contract"
	"deckhand/services/journal"
)

// countingDest is an in-process journal that records what it is handed.
type countingDest struct {
	mu   sync.Mutex
	seen map[string]int
}

func (d *countingDest) Ingest(entries []contract.JournalEntry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range entries {
		d.seen[e.Message]++
	}
	return nil
}

// TestAttachWhileABatchIsInFlight: the in-process journal attaching while
// a batch is on its way through the socket neither panics nor loses or
// repeats an entry (the image's agent once crashed here).
func TestAttachWhileABatchIsInFlight(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "ingest.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got := &countingDest{seen: map[string]int{}}
	inFlight := make(chan struct{}, 1)
	answered := make(chan struct{}, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case inFlight <- struct{}{}:
		default:
		}
		time.Sleep(200 * time.Millisecond) // the journal is slow to answer
		sc := bufio.NewScanner(r.Body)
		var batch []contract.JournalEntry
		for sc.Scan() {
			var e contract.JournalEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				batch = append(batch, e)
			}
		}
		_ = got.Ingest(batch)
		answered <- struct{}{}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	sink := journal.NewSink(journal.SinkConfig{Socket: sock, Capacity: 1000})
	defer sink.Close()
	const n = 100
	for i := range n {
		sink.Record(contract.JournalEntry{Source: "child", Message: fmt.Sprintf("e%d", i)})
	}
	select {
	case <-inFlight:
	case <-time.After(10 * time.Second):
		t.Fatal("no batch reached the socket")
	}
	sink.Attach(got) // while the batch is in flight
	for i := n; i < n+10; i++ {
		sink.Record(contract.JournalEntry{Source: "child", Message: fmt.Sprintf("e%d", i)})
	}
	// The batch that was in flight must be answered (and taken off the
	// sink's buffer) before the counts are final.
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch in flight was never answered")
	}
	for stop := time.Now().Add(10 * time.Second); sink.Buffered() > 0 && time.Now().Before(stop); {
		time.Sleep(10 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got.mu.Lock()
		total := len(got.seen)
		got.mu.Unlock()
		if total == n+10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for i := range n + 10 {
		if c := got.seen[fmt.Sprintf("e%d", i)]; c != 1 {
			t.Errorf("e%d delivered %d times", i, c)
		}
	}
}
