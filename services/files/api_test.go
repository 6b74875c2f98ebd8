package files_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

func TestDownloadRangeETagAndType(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.json"), []byte(`{"hello":"world"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "noext"), []byte("%PDF-1.4 whatever"), 0o644))
	base, _ := serve(t, files.Settings{Root: root})
	u := base + "/api/v1/files/content?path=/a.json"
	status, h, body := call(t, "GET", u, nil)
	if status != 200 || body != `{"hello":"world"}` || h.Get("Content-Type") != "application/json" || h.Get("ETag") == "" || h.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("%d %v %q", status, h, body)
	}
	etag := h.Get("ETag")
	if status, _, body = call(t, "GET", u, nil, "If-None-Match", etag); status != 304 || body != "" {
		t.Fatalf("If-None-Match: %d %q", status, body)
	}
	for _, tc := range []struct{ rng, want, cr string }{
		{"bytes=1-5", `"hell`, "bytes 1-5/17"},
		{"bytes=10-", `world"}`, "bytes 10-16/17"},
		{"bytes=-2", `"}`, "bytes 15-16/17"},
		{"bytes=5-1000", `lo":"world"}`, "bytes 5-16/17"},
	} {
		status, h, body = call(t, "GET", u, nil, "Range", tc.rng)
		if status != 206 || body != tc.want || h.Get("Content-Range") != tc.cr {
			t.Errorf("%s: %d %q %q", tc.rng, status, body, h.Get("Content-Range"))
		}
	}
	if status, h, body = call(t, "GET", u, nil, "Range", "bytes=100-"); status != 416 || h.Get("Content-Range") != "bytes */17" || !strings.Contains(body, "RANGE_NOT_SATISFIABLE") {
		t.Errorf("416: %d %q", status, body)
	}
	if status, _, body = call(t, "GET", u, nil, "Range", "bytes=1-2", "If-Range", `"stale"`); status != 200 || len(body) != 17 {
		t.Errorf("If-Range stale: %d %q", status, body)
	}
	if _, h, _ = call(t, "GET", base+"/api/v1/files/content?path=/noext", nil); h.Get("Content-Type") != "application/pdf" {
		t.Errorf("sniffed type: %q", h.Get("Content-Type"))
	}
	if status, _, body = call(t, "GET", base+"/api/v1/files/content?path=/missing", nil); status != 404 || !strings.Contains(body, "NOT_FOUND") {
		t.Errorf("missing: %d %s", status, body)
	}
}

func TestUploadVariants(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root, MaxUpload: "1M"})
	c := base + "/api/v1/files/content"
	// Raw body, parents created, SHA-256 checked.
	sum := sha256.Sum256([]byte("data"))
	if status, _, body := call(t, "PUT", c+"?path=/x/y/z.txt&sha256="+hex.EncodeToString(sum[:]), str("data")); status != 201 {
		t.Fatalf("raw: %d %s", status, body)
	}
	if status, _, body := call(t, "PUT", c+"?path=/x/y/z.txt&sha256="+strings.Repeat("0", 64), str("other")); status != 400 || !strings.Contains(body, `"details":"sha256"`) {
		t.Fatalf("bad sha: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "x/y/z.txt")); string(b) != "data" {
		t.Fatalf("a refused upload changed the file: %q", b)
	}
	// Over the limit: 413, with and without Content-Length; nothing left.
	big := strings.Repeat("x", 2<<20)
	if status, _, body := call(t, "PUT", c+"?path=/big", str(big)); status != 413 || !strings.Contains(body, "PAYLOAD_TOO_LARGE") {
		t.Fatalf("413: %d %s", status, body)
	}
	if status, _, body := call(t, "PUT", c+"?path=/big", io.MultiReader(str(big))); status != 413 {
		t.Fatalf("413 chunked: %d %s", status, body)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Fatalf("leftovers: %v", ents)
	}
	// Multipart: each file part lands under path.
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	fw, _ := w.CreateFormFile("file", "one.txt")
	fw.Write([]byte("1"))
	fw, _ = w.CreateFormFile("file", "sub/two.txt")
	fw.Write([]byte("22"))
	w.Close()
	status, _, body := call(t, "PUT", c+"?path=/up", &mp, "Content-Type", w.FormDataContentType())
	if status != 201 || !strings.Contains(body, "/up/sub/two.txt") {
		t.Fatalf("multipart: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "up/sub/two.txt")); string(b) != "22" {
		t.Fatalf("multipart on disk: %q", b)
	}
	// A directory as one tar stream (gzip).
	var tb bytes.Buffer
	gz := gzip.NewWriter(&tb)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "d/f.txt", Typeflag: tar.TypeReg, Mode: 0o600, Size: 3})
	tw.Write([]byte("abc"))
	tw.WriteHeader(&tar.Header{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "f.txt"})
	tw.Close()
	gz.Close()
	status, _, body = call(t, "PUT", base+"/api/v1/files/tar?path=/t&gzip=true", &tb)
	if status != 200 || !strings.Contains(body, `"files":1`) || !strings.Contains(body, `"links":1`) {
		t.Fatalf("tar: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "t/d/l")); string(b) != "abc" {
		t.Fatalf("tar on disk: %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(root, "t/d/f.txt")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tar mode: %v", fi)
	}
	var evil bytes.Buffer
	tw = tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "../../evil", Typeflag: tar.TypeReg, Mode: 0o600, Size: 1})
	tw.Write([]byte("e"))
	tw.Close()
	if status, _, body = call(t, "PUT", base+"/api/v1/files/tar?path=/t", &evil); status != 403 || !strings.Contains(body, "OUTSIDE_ROOT") {
		t.Fatalf("tar escape: %d %s", status, body)
	}
}

// Two agents read the same ETag and both write with If-Match: exactly one
// wins, the other gets 412, and the file holds the winner's content.
func TestETagRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root})
	u := base + "/api/v1/files/content?path=/shared.txt"
	_, h, _ := call(t, "PUT", u, str("v0"))
	etag := h.Get("ETag")
	for round := 0; round < 20; round++ {
		const n = 8
		var wg sync.WaitGroup
		statuses := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], _, _ = call(t, "PUT", u, str(fmt.Sprintf("writer %d round %d", i, round)), "If-Match", etag)
			}()
		}
		wg.Wait()
		winners := 0
		winner := -1
		for i, s := range statuses {
			switch s {
			case 200:
				winners++
				winner = i
			case 412:
			default:
				t.Fatalf("round %d: status %d", round, s)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners: %v", round, winners, statuses)
		}
		b, _ := os.ReadFile(filepath.Join(root, "shared.txt"))
		if string(b) != fmt.Sprintf("writer %d round %d", winner, round) {
			t.Fatalf("round %d: content %q, winner %d", round, b, winner)
		}
		_, h, _ = call(t, "GET", u, nil)
		etag = h.Get("ETag")
	}
	if status, _, _ := call(t, "PUT", u, str("x"), "If-None-Match", "*"); status != 412 {
		t.Fatalf("If-None-Match *: %d", status)
	}
}

func TestResumableUpload(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root})
	data := bytes.Repeat([]byte("0123456789"), 100000)
	sum := sha256.Sum256(data)
	status, _, body := call(t, "POST", base+"/api/v1/files/uploads",
		str(fmt.Sprintf(`{"path":"/r/big.bin","size":%d,"sha256":"%x"}`, len(data), sum)))
	if status != 201 {
		t.Fatalf("start: %d %s", status, body)
	}
	var up struct {
		ID       string `json:"id"`
		Offset   int64  `json:"offset"`
		Complete bool   `json:"complete"`
	}
	json.Unmarshal([]byte(body), &up)
	u := base + "/api/v1/files/uploads/" + up.ID
	// First chunk, then a retry at a wrong offset, then the rest.
	if status, _, body = call(t, "PATCH", u, bytes.NewReader(data[:300000]), "Upload-Offset", "0"); status != 200 {
		t.Fatalf("chunk 1: %d %s", status, body)
	}
	if status, h, body := call(t, "PATCH", u, bytes.NewReader(data[:10]), "Upload-Offset", "0"); status != 409 || h.Get("Upload-Offset") != "300000" {
		t.Fatalf("wrong offset: %d %s", status, body)
	}
	if status, _, body = call(t, "GET", u, nil); status != 200 || !strings.Contains(body, `"offset":300000`) {
		t.Fatalf("status: %d %s", status, body)
	}
	if _, err := os.Stat(filepath.Join(root, "r/big.bin")); err == nil {
		t.Fatal("the target appeared before the upload completed")
	}
	status, _, body = call(t, "PATCH", u, bytes.NewReader(data[300000:]), "Upload-Offset", "300000")
	if status != 200 || !strings.Contains(body, `"complete":true`) {
		t.Fatalf("last chunk: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "r/big.bin")); !bytes.Equal(b, data) {
		t.Fatal("content differs")
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "r")); len(ents) != 1 {
		t.Fatalf("leftovers: %v", ents)
	}
}

func TestFileOperations(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root})
	api := base + "/api/v1/files"
	for _, step := range []struct {
		method, url, body string
		status            int
		contains          string
	}{
		{"POST", "/mkdir", `{"path":"/p/q"}`, 201, `"type":"dir"`},
		{"POST", "/mkdir", `{"path":"/p/q","parents":false}`, 409, "CONFLICT"},
		{"POST", "/mkdir", `{"path":"/p/r","mode":"99"}`, 400, `"details":"mode"`},
		{"PUT", "/content?path=/p/q/f.txt", "hello", 201, `"size":5`},
		{"PUT", "/content?path=/p/q/.hidden", "h", 201, ""},
		{"POST", "/copy", `{"from":"/p","to":"/c"}`, 201, `"path":"/c"`},
		{"POST", "/copy", `{"from":"/p","to":"/c"}`, 409, "CONFLICT"},
		{"POST", "/copy", `{"from":"/p","to":"/p/q/inside"}`, 400, `"details":"to"`},
		{"POST", "/move", `{"from":"/c/q/f.txt","to":"/m/g.txt"}`, 200, `"path":"/m/g.txt"`},
		{"POST", "/chmod", `{"path":"/m/g.txt","mode":"0600"}`, 200, `"mode":"0600"`},
		{"POST", "/chown", `{"path":"/m/g.txt","owner":"no-such-user-x"}`, 400, `"details":"owner"`},
		{"POST", "/chown", fmt.Sprintf(`{"path":"/m/g.txt","owner":"%d","group":"%d"}`, os.Getuid(), os.Getgid()), 200, `"mode":"0600"`},
		{"GET", "/stat?path=/m/g.txt", "", 200, `"etag"`},
		{"GET", "?path=/c&depth=3", "", 200, `"path":"/c/q"`},
		{"GET", "/search?path=/&name=*.txt", "", 200, `"/p/q/f.txt"`},
		{"GET", "/search?path=/&content=hel%2Bo", "", 200, `"text":"hello"`},
		{"GET", "/search?path=/&content=(", "", 400, `"details":"content"`},
		{"DELETE", "?path=/c", "", 409, `"details":"recursive"`},
		{"DELETE", "?path=/c&recursive=true", "", 204, ""},
		{"DELETE", "?path=/c", "", 404, "NOT_FOUND"},
		{"DELETE", "?path=/", "", 400, `"details":"path"`},
	} {
		status, _, body := call(t, step.method, api+step.url, str(step.body))
		if status != step.status || !strings.Contains(body, step.contains) {
			t.Errorf("%s %s %s: %d %s", step.method, step.url, step.body, status, body)
		}
	}
	var l struct {
		Entries []files.Entry `json:"entries"`
	}
	_, _, body := call(t, "GET", api+"?path=/p/q&hidden=true", nil)
	json.Unmarshal([]byte(body), &l)
	if len(l.Entries) != 2 || l.Entries[0].Name != ".hidden" {
		t.Errorf("hidden listing: %s", body)
	}
	must(t, os.Symlink("q/f.txt", filepath.Join(root, "p", "link")))
	_, _, body = call(t, "GET", api+"/stat?path=/p/link", nil)
	if !strings.Contains(body, `"symlink_target":"q/f.txt"`) || !strings.Contains(body, `"type":"symlink"`) {
		t.Errorf("link stat: %s", body)
	}
	// gitignore on request.
	must(t, os.WriteFile(filepath.Join(root, "p", ".gitignore"), []byte("q/\n"), 0o644))
	_, _, body = call(t, "GET", api+"/search?path=/p&name=*&gitignore=true&hidden=true", nil)
	if strings.Contains(body, "f.txt") || !strings.Contains(body, ".gitignore") {
		t.Errorf("gitignore: %s", body)
	}
	// Archives.
	status, _, zbody := call(t, "GET", api+"/archive?path=/p&format=zip", nil)
	zr, err := zip.NewReader(bytes.NewReader([]byte(zbody)), int64(len(zbody)))
	if status != 200 || err != nil {
		t.Fatalf("zip: %d %v", status, err)
	}
	names := []string{}
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "q/f.txt") {
		t.Errorf("zip names: %v", names)
	}
	_, _, tbody := call(t, "GET", api+"/archive?path=/p", nil)
	gz, err := gzip.NewReader(strings.NewReader(tbody))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	found := false
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Name == "q/f.txt" {
			b, _ := io.ReadAll(tr)
			found = string(b) == "hello"
		}
	}
	if !found {
		t.Error("tar.gz lacks q/f.txt")
	}
}

// A resumable upload continues after the service restarts: the session is
// in the service's store and the partial file beside the target.
func TestResumableUploadSurvivesRestart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	deps := platformtest.ServiceDeps(t, "files")
	base, svc := serveWith(t, deps, files.Settings{Root: root})
	status, h, body := call(t, "POST", base+"/api/v1/files/uploads", str(`{"path":"/resume.txt","size":11}`))
	if status != 201 || !strings.HasPrefix(h.Get("Location"), "/api/v1/files/uploads/") {
		t.Fatalf("start: %d %s", status, body)
	}
	var up struct{ ID string }
	json.Unmarshal([]byte(body), &up)
	if status, h, body := call(t, "GET", base+"/api/v1/files/uploads/"+up.ID, nil); status != 200 || h.Get("Upload-Offset") != "0" {
		t.Fatalf("where it stands: %d %v %s", status, h, body)
	}
	if status, _, body = call(t, "PATCH", base+"/api/v1/files/uploads/"+up.ID, str("hello "), "Upload-Offset", "0"); status != 200 {
		t.Fatalf("patch: %d %s", status, body)
	}
	svc.Close()
	base, _ = serveWith(t, deps, files.Settings{Root: root})
	if status, _, body = call(t, "GET", base+"/api/v1/files/uploads/"+up.ID, nil); status != 200 || !strings.Contains(body, `"offset":6`) {
		t.Fatalf("after restart: %d %s", status, body)
	}
	if status, _, body = call(t, "PATCH", base+"/api/v1/files/uploads/"+up.ID, str("world"), "Upload-Offset", "6"); status != 200 || !strings.Contains(body, `"complete":true`) {
		t.Fatalf("finish: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "resume.txt")); string(b) != "hello world" {
		t.Fatalf("content %q", b)
	}
	if status, _, _ = call(t, "GET", base+"/api/v1/files/uploads/"+up.ID, nil); status != 404 {
		t.Fatalf("a finished upload is still listed: %d", status)
	}
}

// The same race over WebDAV: PUTs carrying one If-Match ETag, one winner.
func TestDAVETagRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base, _ := serve(t, files.Settings{Root: root})
	u := base + "/dav/shared.txt"
	call(t, "PUT", u, str("v0"))
	for round := 0; round < 10; round++ {
		_, h, _ := call(t, "GET", u, nil)
		etag := h.Get("ETag")
		var wg sync.WaitGroup
		statuses := make([]int, 6)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], _, _ = call(t, "PUT", u, str(fmt.Sprintf("w%d r%d", i, round)), "If-Match", etag)
			}()
		}
		wg.Wait()
		wins := 0
		for _, s := range statuses {
			switch s {
			case 201, 204, 200:
				wins++
			case 412, 423: // 423: x/net's request lock, another PUT is in flight
			default:
				t.Fatalf("round %d: status %d", round, s)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners %v", round, wins, statuses)
		}
	}
}
