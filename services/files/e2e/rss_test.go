package e2e_test

import (
	"crypto/sha256"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

const twoGiB = 2 << 30

// A 2 GiB download and a 2 GiB upload keep the service's resident memory
// flat: the peak (VmHWM) grows by far less than the file.
func TestTwoGiBTransfersKeepRSSFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 4 GiB")
	}
	root := t.TempDir()
	// A sparse source: the kernel hands out zeros without disk reads.
	f, err := os.Create(filepath.Join(root, "src.bin"))
	must(t, err)
	must(t, f.Truncate(twoGiB))
	f.Close()
	p := start(t, root)
	// Warm up so the baseline includes the runtime's steady state.
	resp, err := http.Get(p.url + "/api/v1/files?path=/")
	must(t, err)
	resp.Body.Close()
	base := p.status("VmRSS")

	resp, err = http.Get(p.url + "/api/v1/files/content?path=/src.bin")
	must(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != twoGiB || resp.StatusCode != 200 {
		t.Fatalf("download: %d bytes, %v, %d", n, err, resp.StatusCode)
	}
	afterDown := p.status("VmHWM")

	h := sha256.New()
	body := io.TeeReader(io.LimitReader(zeros{}, twoGiB), h)
	req, _ := http.NewRequest("PUT", p.url+"/api/v1/files/content?path=/up.bin", body)
	req.ContentLength = twoGiB
	resp, err = http.DefaultClient.Do(req)
	must(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	peak := p.status("VmHWM")
	fi, err := os.Stat(filepath.Join(root, "up.bin"))
	if err != nil || fi.Size() != twoGiB {
		t.Fatalf("uploaded file: %v %v", fi, err)
	}
	t.Logf("RSS baseline %d MiB, peak after download %d MiB, peak after upload %d MiB", base>>20, afterDown>>20, peak>>20)
	const allowance = 64 << 20
	if afterDown > base+allowance || peak > base+allowance {
		t.Fatalf("resident memory grew with the transfer: baseline %d MiB, peak %d / %d MiB", base>>20, afterDown>>20, peak>>20)
	}

}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
