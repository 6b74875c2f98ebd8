package files_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/platform"
	"deckhand/services/files"
)

// A resumable upload treats a link at its path as a plain PUT does: a
// link inside the root is written through (the link stays, its target
// gets the content), a link leading out is refused with 403 OUTSIDE_ROOT
// when the upload starts, and never replaced.
func TestResumableUploadToALinkActsAsPUT(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "o.txt"), []byte("outside"), 0o644))
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "target.txt"), []byte("old"), 0o644))
	must(t, os.Symlink("target.txt", filepath.Join(root, "ln")))
	must(t, os.Symlink(filepath.Join(outside, "o.txt"), filepath.Join(root, "out")))
	base, _ := serve(t, files.Settings{Root: root})

	putStatus, _, putBody := call(t, "PUT", base+"/api/v1/files/content?path=/out", str("new"))
	status, _, body := call(t, "POST", base+"/api/v1/files/uploads", str(`{"path":"/out","size":3}`))
	if putStatus != 403 || !strings.Contains(putBody, "OUTSIDE_ROOT") || status != putStatus || !strings.Contains(body, "OUTSIDE_ROOT") {
		t.Fatalf("link out: PUT %d %s; upload %d %s", putStatus, putBody, status, body)
	}
	// Zero bytes completes at once: the same refusal.
	if status, _, body = call(t, "POST", base+"/api/v1/files/uploads", str(`{"path":"/out","size":0}`)); status != 403 {
		t.Fatalf("empty upload to a link out: %d %s", status, body)
	}
	if got := linkTo(t, filepath.Join(root, "out")); got != filepath.Join(outside, "o.txt") {
		t.Fatalf("the link out changed: %q", got)
	}

	status, _, body = call(t, "POST", base+"/api/v1/files/uploads", str(`{"path":"/ln","size":3}`))
	var up files.Upload
	if err := json.Unmarshal([]byte(body), &up); err != nil || status != 201 {
		t.Fatalf("start: %d %s", status, body)
	}
	if status, _, body = call(t, "PATCH", base+"/api/v1/files/uploads/"+up.ID, str("new"), "Upload-Offset", "0"); status != 200 || !strings.Contains(body, `"complete":true`) {
		t.Fatalf("patch: %d %s", status, body)
	}
	if got := linkTo(t, filepath.Join(root, "ln")); got != "target.txt" {
		t.Fatalf("the link was replaced: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "target.txt")); string(b) != "new" {
		t.Fatalf("target: %q", b)
	}
	// A link pointed out of the root while the upload ran is refused when
	// it completes, and left as it is.
	status, _, body = call(t, "POST", base+"/api/v1/files/uploads", str(`{"path":"/ln","size":3}`))
	if err := json.Unmarshal([]byte(body), &up); err != nil || status != 201 {
		t.Fatalf("start: %d %s", status, body)
	}
	must(t, os.Remove(filepath.Join(root, "ln")))
	must(t, os.Symlink(filepath.Join(outside, "o.txt"), filepath.Join(root, "ln")))
	if status, _, body = call(t, "PATCH", base+"/api/v1/files/uploads/"+up.ID, str("bad"), "Upload-Offset", "0"); status != 403 || !strings.Contains(body, "OUTSIDE_ROOT") {
		t.Fatalf("patch after the link moved out: %d %s", status, body)
	}
	if got := linkTo(t, filepath.Join(root, "ln")); got != filepath.Join(outside, "o.txt") {
		t.Fatalf("the link was replaced: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "o.txt")); string(b) != "outside" {
		t.Fatalf("outside: %q", b)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".deckhand-") {
			t.Errorf("temporary left behind: %s", e.Name())
		}
	}
}

// Downloads carry X-Content-Type-Options: nosniff, and every type a
// browser could run as a page (SVG, HTML, XML, anything not known to be
// passive) the sandboxing Content-Security-Policy: a file served from the
// agent's origin must not script it. Over REST and WebDAV, through a
// link too, and for ranges.
func TestDownloadsOfActiveContentAreSandboxed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, content := range map[string]string{
		"a.svg":  `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>`,
		"b.html": `<script>alert(1)</script>`,
		"c.xml":  `<x/>`,
		"d.png":  "\x89PNG\r\n\x1a\n0000",
		"e.pdf":  "%PDF-1.4",
		"f.txt":  "plain",
		"g.mp4":  "\x00\x00\x00\x18ftypmp42",
		"sniffs": "<html><script>alert(1)</script>",
	} {
		must(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	must(t, os.Symlink("a.svg", filepath.Join(root, "ln.svg")))
	base, _ := serve(t, files.Settings{Root: root})
	for _, tc := range []struct {
		name    string
		sandbox bool
	}{
		{"a.svg", true}, {"ln.svg", true}, {"b.html", true}, {"c.xml", true}, {"sniffs", true},
		{"d.png", false}, {"e.pdf", false}, {"f.txt", false}, {"g.mp4", false},
	} {
		for _, u := range []string{"/api/v1/files/content?path=/" + tc.name, "/dav/" + tc.name} {
			for _, rng := range []string{"", "bytes=0-2"} {
				status, h, _ := call(t, "GET", base+u, nil, "Range", rng)
				csp := h.Get("Content-Security-Policy")
				if status/100 != 2 || h.Get("X-Content-Type-Options") != "nosniff" ||
					(tc.sandbox && csp != platform.SandboxCSP) || (!tc.sandbox && csp != "frame-ancestors 'none'") {
					t.Errorf("%s (Range %q): %d %s, CSP %q, nosniff %q", u, rng, status, h.Get("Content-Type"), csp, h.Get("X-Content-Type-Options"))
				}
			}
		}
	}
}
