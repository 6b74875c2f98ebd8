package journal_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/platform/store"
	"deckhand/services/journal"
)

func benchEntry(i int) contract.JournalEntry {
	return contract.JournalEntry{Source: "bench", Level: "info", Message: fmt.Sprintf("line %d of program output", i),
		Fields: map[string]any{"stream": "stdout", "pid": 4242}}
}

// BenchmarkIngest measures entries per second from Record to committed on
// disk: in-process (the sink hands entries to the service), through the
// ingest socket (an isolated writer), and, for scale, the log the agent
// wrote before the journal existed (slog JSON lines to a file).
func BenchmarkIngest(b *testing.B) {
	b.Run("in-process", func(b *testing.B) {
		f := newJournal(b, &journal.Settings{MaxBytes: 1 << 30}, nil)
		b.ResetTimer()
		for i := range b.N {
			f.sink.Record(benchEntry(i))
		}
		if _, err := f.svc.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("socket", func(b *testing.B) {
		f := newJournal(b, &journal.Settings{MaxBytes: 1 << 30}, nil)
		remote := journal.NewSink(journal.SinkConfig{Socket: journal.SocketPath(filepath.Dir(f.deps.DataDir)), Capacity: 1 << 20})
		defer remote.Close()
		b.ResetTimer()
		for i := range b.N {
			remote.Record(benchEntry(i))
		}
		for remote.Buffered() > 0 {
			time.Sleep(time.Millisecond)
		}
		if _, err := f.svc.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		if remote.Dropped() > 0 {
			b.Fatalf("dropped %d", remote.Dropped())
		}
	})
	b.Run("slog-file", func(b *testing.B) {
		file, err := os.Create(filepath.Join(b.TempDir(), "agent.log"))
		if err != nil {
			b.Fatal(err)
		}
		defer file.Close()
		j := contract.LogJournal{Logger: slog.New(slog.NewJSONHandler(file, nil))}
		b.ResetTimer()
		for i := range b.N {
			j.Record(benchEntry(i))
		}
		_ = file.Sync()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
}

var (
	millionOnce sync.Once
	million     *fixture
	millionT0   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// journalOfAMillion fills one journal with 1,000,000 entries from 20
// sources, 1 in 100 an error, one second apart (11.6 days), shared by the
// query benchmarks.
func journalOfAMillion(b *testing.B) *fixture {
	millionOnce.Do(func() {
		// Shared across benchmarks, so outside any one's TempDir; the
		// directory is left for the OS's temporary-file cleanup.
		dir, _ := os.MkdirTemp("", "journal-bench-")
		db, err := store.Open(filepath.Join(dir, "journal", "store.db"))
		if err != nil {
			b.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		deps := contract.ServiceDeps{Name: "journal", DataDir: filepath.Join(dir, "journal"), Store: db, Logger: log,
			Clock: clock.SystemClock{}, Journal: contract.LogJournal{Logger: log}}
		svc, err := journal.New(deps, &journal.Settings{MaxBytes: 4 << 30})
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]contract.JournalEntry, 0, 10000)
		for i := range 1_000_000 {
			lv := "info"
			if i%100 == 0 {
				lv = "error"
			}
			batch = append(batch, contract.JournalEntry{Time: millionT0.Add(time.Duration(i) * time.Second),
				Source: fmt.Sprintf("prog%02d", i%20), Level: lv, Message: fmt.Sprintf("request %d served in %d ms", i, i%997)})
			if len(batch) == cap(batch) {
				_ = svc.Ingest(batch)
				batch = batch[:0]
				if _, err := svc.Flush(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		}
		million = &fixture{svc: svc, deps: deps}
	})
	return million
}

// BenchmarkQuery1M: filtered reads over a journal of 1,000,000 entries.
func BenchmarkQuery1M(b *testing.B) {
	f := journalOfAMillion(b)
	since := millionT0.Add(500_000 * time.Second)
	until := since.Add(time.Hour)
	mid, err := f.svc.Read(journal.Query{Filter: journal.Filter{Since: &since}, Limit: 1})
	if err != nil || len(mid.Entries) != 1 {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		q    journal.Query
		want int
	}{
		{"tail-100", journal.Query{Limit: 100}, 100},
		{"source-tail-100", journal.Query{Filter: journal.Filter{Sources: []string{"prog07"}}, Limit: 100}, 100},
		{"errors-tail-100", journal.Query{Filter: journal.Filter{MinLevel: 3}, Limit: 100}, 100},
		{"since-until-hour", journal.Query{Filter: journal.Filter{Since: &since, Until: &until}, Limit: 10000}, 3601},
		{"cursor-page-1000", journal.Query{Cursor: mid.Entries[0].Cursor, Limit: 1000}, 1000},
		{"text-rare-full-scan", journal.Query{Filter: journal.Filter{Text: "request 999999 "}, Limit: 100}, 1},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				p, err := f.svc.Read(tc.q)
				if err != nil || len(p.Entries) != tc.want {
					b.Fatalf("%d entries, %v", len(p.Entries), err)
				}
			}
		})
	}
}
