package files_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
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
	start := platformtest.CPUTime()
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		b.SetBytes(n)
	}
	platformtest.ReportCPU(b, start)
}

// benchFile is a root holding one file of n bytes (in memory where the
// system has /dev/shm, so the disk does not set the pace).
func benchFile(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "files-bench-"); err == nil {
			b.Cleanup(func() { _ = os.RemoveAll(d) })
			root = d
		}
	}
	must(b, os.WriteFile(filepath.Join(root, "big.bin"), make([]byte, n), 0o644))
	return root
}

// BenchmarkDownload fetches a 256 MiB file over HTTP (sendfile):
// go test -run '^$' -bench 'Download|Upload|Propfind' -count 5 ./services/files/
func BenchmarkDownload(b *testing.B) {
	const size = 256 << 20
	base, _ := serve(b, files.Settings{Root: benchFile(b, size)})
	for _, path := range []string{"/api/v1/files/content?path=/big.bin", "/dav/big.bin"} {
		b.Run(strings.SplitN(path, "/", 3)[1], func(b *testing.B) {
			b.SetBytes(size)
			start := platformtest.CPUTime()
			for b.Loop() {
				resp, err := http.Get(base + path)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err, resp)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != size {
					b.Fatalf("%d bytes", n)
				}
				resp.Body.Close()
			}
			platformtest.ReportCPU(b, start)
		})
	}
}

// BenchmarkDownloadSmall fetches a 4 KiB file: what one request costs
// beyond its bytes (binding, headers, the open).
func BenchmarkDownloadSmall(b *testing.B) {
	const size = 4 << 10
	root := benchFile(b, 0)
	must(b, os.WriteFile(filepath.Join(root, "small.bin"), make([]byte, size), 0o644))
	base, _ := serve(b, files.Settings{Root: root})
	for _, path := range []string{"/api/v1/files/content?path=/small.bin", "/dav/small.bin"} {
		b.Run(strings.SplitN(path, "/", 3)[1], func(b *testing.B) {
			b.SetBytes(size)
			start := platformtest.CPUTime()
			for b.Loop() {
				resp, err := http.Get(base + path)
				if err != nil || resp.StatusCode != 200 {
					b.Fatal(err, resp)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			platformtest.ReportCPU(b, start)
		})
	}
}

// BenchmarkUpload writes a 64 MiB body through PUT content and WebDAV PUT
// (streamed to a temporary, fsynced, renamed).
func BenchmarkUpload(b *testing.B) {
	const size = 64 << 20
	root := benchFile(b, 0)
	base, _ := serve(b, files.Settings{Root: root})
	body := make([]byte, size)
	for _, path := range []string{"/api/v1/files/content?path=/up.bin", "/dav/up.bin"} {
		b.Run(strings.SplitN(path, "/", 3)[1], func(b *testing.B) {
			b.SetBytes(size)
			start := platformtest.CPUTime()
			for b.Loop() {
				req, _ := http.NewRequest("PUT", base+path, bytes.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode >= 300 {
					b.Fatal(err, resp)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			platformtest.ReportCPU(b, start)
		})
	}
}

// BenchmarkPropfind lists a collection of 10,000 files over WebDAV
// (Depth 1, allprop), the multistatus streamed as it is built.
func BenchmarkPropfind(b *testing.B) {
	root := benchFile(b, 0)
	must(b, os.Mkdir(filepath.Join(root, "many"), 0o755))
	for i := range 10000 {
		f, err := os.Create(filepath.Join(root, "many", fmt.Sprintf("file-%05d.txt", i)))
		must(b, err)
		f.Close()
	}
	base, _ := serve(b, files.Settings{Root: root})
	start := platformtest.CPUTime()
	for b.Loop() {
		req, _ := http.NewRequest("PROPFIND", base+"/dav/many/", nil)
		req.Header.Set("Depth", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 207 {
			b.Fatal(err, resp)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		b.SetBytes(n)
	}
	platformtest.ReportCPU(b, start)
}
