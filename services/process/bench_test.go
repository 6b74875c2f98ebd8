package process_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"deckhand/services/process"
	"deckhand/services/process/client"
)

// BenchmarkFollow follows `cat` of 256 MiB over the WebSocket with binary
// frames, straight to the service (scripts/bench/process.sh measures it
// through the gateway against a pipe and ssh).
func BenchmarkFollow(b *testing.B) {
	const size = 256 << 20
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
	for i := 0; i < size>>20; i++ {
		_, _ = f.Write(buf)
	}
	f.Close()
	e := newBenchEnv(b)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		p, err := e.Start(ctx, process.StartInput{Spec: process.Spec{Cmd: []string{"cat", path}}, HoldOutput: true})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		if _, err := e.Follow(ctx, p.ID, 0, client.FollowOptions{}, func(o client.Output) error { n += int64(len(o.Data)); return nil }); err != nil || n != size {
			b.Fatal(err, n)
		}
	}
}
