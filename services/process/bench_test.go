package process_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"

	"deckhand/services/process"
)

// BenchmarkFollow follows `cat` of 256 MiB (PROCESS_BENCH_MIB) over the
// WebSocket with binary frames, straight to the service, with the
// service's default bounds (scripts/bench/process.sh measures it through
// the gateway against a pipe and ssh).
func BenchmarkFollow(b *testing.B) {
	size := int64(256 << 20)
	if v, err := strconv.Atoi(os.Getenv("PROCESS_BENCH_MIB")); err == nil && v > 0 {
		size = int64(v) << 20
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "data")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for i := int64(0); i < size>>20; i++ {
		_, _ = f.Write(buf)
	}
	f.Close()
	e := newBenchEnv(b)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		p, err := sdkCall[process.Process](ctx, e, http.MethodPost, "/api/v1/process",
			process.StartInput{Spec: process.Spec{Cmd: []string{"cat", path}}, HoldOutput: true})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		count := func(o deckhand.Output) error { n += int64(len(o.Data)); return nil }
		if _, err := e.Stream(ctx, p.ID, deckhand.StreamOptions{Binary: true}, count); err != nil || n != size {
			b.Fatal(err, n)
		}
	}
}
