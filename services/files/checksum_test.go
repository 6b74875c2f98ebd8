package files_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

// The checksum is the content's SHA-256 with the ETag the download sends
// for the same version, and a path that is not a regular file is refused
// the way the download refuses it.
func TestChecksum(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := newHost(t, root)
	content := strings.Repeat("deckhand checksum\n", 100000)
	if err := os.WriteFile(filepath.Join(root, "a.bin"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	var sum files.Checksum
	status, raw := platformtest.GetJSON(t, h, "/api/v1/files/checksum?path=/a.bin", &sum)
	want := sha256.Sum256([]byte(content))
	if status != 200 || sum.SHA256 != hex.EncodeToString(want[:]) || sum.Size != int64(len(content)) || sum.Path != "/a.bin" {
		t.Fatalf("%d %s", status, raw)
	}
	resp, err := h.App().Test(platformtest.NewRequest("GET", "/api/v1/files/content?path=/a.bin", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if et := resp.Header.Get("ETag"); et == "" || et != sum.ETag {
		t.Fatalf("download ETag %q, checksum ETag %q", et, sum.ETag)
	}
	cases := []struct {
		path   string
		status int
		code   string
	}{
		{"/dir", 409, "CONFLICT"},
		{"/missing", 404, "NOT_FOUND"},
		{"/../etc/passwd", 403, "OUTSIDE_ROOT"},
		{"", 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			var e map[string]any
			status, raw := platformtest.GetJSON(t, h, "/api/v1/files/checksum?path="+url.QueryEscape(tc.path), &e)
			if status != tc.status || (tc.code != "" && e["code"] != tc.code) || e["message"] == "" {
				t.Fatalf("%s: %d %s", tc.path, status, raw)
			}
		})
	}
}
