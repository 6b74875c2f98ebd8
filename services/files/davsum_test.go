package files_test

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"deckhand/services/files"
)

const ocPropfind = `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">` +
	`<d:prop><d:getcontentlength/><oc:checksums/></d:prop></d:propfind>`

// ocSums reads the oc:checksums of each href of a multistatus the way
// rclone's webdav backend does (prop>checksums>checksum, any namespace).
func ocSums(t *testing.T, body string) map[string]string {
	t.Helper()
	var ms struct {
		Responses []struct {
			Href      string   `xml:"href"`
			Checksums []string `xml:"propstat>prop>checksums>checksum"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("multistatus: %v\n%s", err, body)
	}
	out := map[string]string{}
	for _, r := range ms.Responses {
		out[r.Href] = strings.Join(r.Checksums, " ")
	}
	return out
}

func sumsOf(content string) string {
	s1, s5 := sha1.Sum([]byte(content)), md5.Sum([]byte(content))
	return "SHA1:" + hex.EncodeToString(s1[:]) + " MD5:" + hex.EncodeToString(s5[:])
}

// PROPFIND naming oc:checksums answers each file's SHA-1 and MD5 as
// ownCloud does, computed again once the file changed; allprop leaves
// them out; collections have none.
func TestPropfindAnswersOwnCloudChecksums(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o755))
	base, _ := serve(t, files.Settings{Root: root})

	status, _, body := call(t, "PROPFIND", base+"/dav/", str(ocPropfind), "Depth", "1")
	if status != 207 {
		t.Fatalf("PROPFIND: %d %s", status, body)
	}
	got := ocSums(t, body)
	if got["/dav/a.txt"] != sumsOf("alpha") || got["/dav/sub/"] != "" {
		t.Fatalf("checksums %v\n%s", got, body)
	}

	// Same size, a later mtime: the cache must not answer the old sums.
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("omega"), 0o644))
	later := time.Now().Add(time.Hour)
	must(t, os.Chtimes(filepath.Join(root, "a.txt"), later, later))
	_, _, body = call(t, "PROPFIND", base+"/dav/a.txt", str(ocPropfind), "Depth", "0")
	if got := ocSums(t, body); got["/dav/a.txt"] != sumsOf("omega") {
		t.Fatalf("after a change: %v\n%s", got, body)
	}

	_, _, body = call(t, "PROPFIND", base+"/dav/", str(`<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:allprop/></d:propfind>`), "Depth", "1")
	if strings.Contains(body, "checksum") {
		t.Fatalf("allprop computed checksums:\n%s", body)
	}
}

// A PUT's OC-Checksum is checked before the rename (a mismatch leaves the
// old content and answers 400 naming the header), and X-OC-Mtime sets the
// written file's modification time.
func TestPutChecksOCChecksumAndKeepsOCMtime(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("old"), 0o644))
	base, _ := serve(t, files.Settings{Root: root})
	s1 := sha1.Sum([]byte("new"))
	m5 := md5.Sum([]byte("new"))
	cases := []struct {
		name, header string
		status       int
		content      string
		detail       string
	}{
		{"sha1 mismatch", "SHA1:" + strings.Repeat("0", 40), 400, "old", "OC-Checksum"},
		{"md5 mismatch", "MD5:" + strings.Repeat("0", 32), 400, "old", "OC-Checksum"},
		{"bad digest", "SHA1:xyz", 400, "old", "OC-Checksum"},
		{"unchecked algorithm", "ADLER32:01234567", 201, "new", ""},
		{"md5", "MD5:" + hex.EncodeToString(m5[:]), 201, "new", ""},
		{"sha1", "SHA1:" + hex.EncodeToString(s1[:]), 201, "new", ""},
	}
	for _, tc := range cases {
		must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("old"), 0o644))
		status, _, body := call(t, "PUT", base+"/dav/f.txt", str("new"), "OC-Checksum", tc.header, "Accept", "application/json")
		b, _ := os.ReadFile(filepath.Join(root, "f.txt"))
		if status != tc.status || string(b) != tc.content || !strings.Contains(body, tc.detail) {
			t.Errorf("%s: %d %q, content %q", tc.name, status, body, b)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, ".f.txt.deckhand-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporaries left: %v", leftovers)
	}

	status, hdr, body := call(t, "PUT", base+"/dav/m.txt", str("m"), "X-OC-Mtime", "1500000000")
	fi, err := os.Stat(filepath.Join(root, "m.txt"))
	if status != 201 || err != nil || fi.ModTime().Unix() != 1500000000 || hdr.Get("X-OC-Mtime") != "accepted" {
		t.Fatalf("X-OC-Mtime: %d %s %v %v", status, body, fi, hdr)
	}
	// The ETag answered is the file's as it now stands.
	_, stat, _ := call(t, "HEAD", base+"/dav/m.txt", nil)
	if hdr.Get("ETag") == "" || hdr.Get("ETag") != stat.Get("ETag") {
		t.Errorf("PUT answered ETag %q, the file has %q", hdr.Get("ETag"), stat.Get("ETag"))
	}
	if status, _, body := call(t, "PUT", base+"/dav/n.txt", str("n"), "X-OC-Mtime", "yesterday", "Accept", "application/json"); status != 400 ||
		!strings.Contains(body, "X-OC-Mtime") {
		t.Errorf("bad X-OC-Mtime: %d %s", status, body)
	}
}
