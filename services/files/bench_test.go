package files_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"deckhand/services/files"
)

// BenchmarkList100k lists a folder of 100,000 files over HTTP (target
// under 1 s): go test -run '^$' -bench List100k -benchtime 5x ./services/files/
func BenchmarkList100k(b *testing.B) {
	root := b.TempDir()
	dir := filepath.Join(root, "many")
	must(b, os.Mkdir(dir, 0o755))
	for i := range 100000 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("file-%06d.txt", i)))
		must(b, err)
		f.Close()
	}
	base, _ := serve(b, files.Settings{Root: root})
	url := base + "/api/v1/files?path=/many&limit=1000000"
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		b.SetBytes(n)
	}
}
