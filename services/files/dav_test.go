package files_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/platformtest"
	"deckhand/services/files"
)

// loopTree is a root holding four links to itself: a walk that follows
// links grows as 4^depth.
func loopTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("x"), 0o644))
	for _, n := range []string{"l1", "l2", "l3", "l4"} {
		must(t, os.Symlink(".", filepath.Join(root, n)))
	}
	return root
}

// memDir is a temporary directory in memory where the system has one
// (thousands of files are made in milliseconds there, seconds on a busy
// disk), else on disk.
func memDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "files-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// davErrorBody is RFC 4918's DAV:error with whatever it holds.
type davErrorBody struct {
	XMLName xml.Name
	Any     []struct {
		XMLName xml.Name
		Text    string `xml:",chardata"`
	} `xml:",any"`
}

func parseDAVError(t *testing.T, body string) davErrorBody {
	t.Helper()
	var e davErrorBody
	if err := xml.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not XML: %v\n%s", err, body)
	}
	if e.XMLName != (xml.Name{Space: "DAV:", Local: "error"}) {
		t.Fatalf("root element %v, want DAV: error\n%s", e.XMLName, body)
	}
	return e
}

func (e davErrorBody) has(space, local string) bool {
	for _, a := range e.Any {
		if a.XMLName.Space == space && a.XMLName.Local == local {
			return true
		}
	}
	return false
}

// multistatusHrefs is the hrefs of a 207 answer.
func multistatusHrefs(t *testing.T, body string) []string {
	t.Helper()
	var ms struct {
		Responses []struct {
			Href string `xml:"DAV: href"`
		} `xml:"DAV: response"`
	}
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("multistatus: %v\n%.500s", err, body)
	}
	var out []string
	for _, r := range ms.Responses {
		out = append(out, r.Href)
	}
	return out
}

// PROPFIND of infinite depth (asked for, or no Depth header) is refused
// with RFC 4918's propfind-finite-depth precondition: on a tree of links
// to itself it would never end.
func TestPropfindInfiniteDepthIsRefused(t *testing.T) {
	t.Parallel()
	base, _ := serve(t, files.Settings{Root: loopTree(t)})
	for _, hdr := range [][]string{nil, {"Depth", "infinity"}} {
		status, h, body := call(t, "PROPFIND", base+"/dav/", nil, hdr...)
		if status != 403 || !strings.Contains(h.Get("Content-Type"), "xml") {
			t.Fatalf("Depth %v: %d %s %.300s", hdr, status, h.Get("Content-Type"), body)
		}
		if e := parseDAVError(t, body); !e.has("DAV:", "propfind-finite-depth") {
			t.Fatalf("Depth %v: no propfind-finite-depth: %s", hdr, body)
		}
	}
	// Finite depths answer, and stay small on the loop.
	status, _, body := call(t, "PROPFIND", base+"/dav/", nil, "Depth", "1")
	if hrefs := multistatusHrefs(t, body); status != 207 || len(hrefs) != 6 {
		t.Fatalf("Depth 1: %d %v", status, hrefs)
	}
	status, _, body = call(t, "PROPFIND", base+"/dav/l1/l2/", nil, "Depth", "0")
	if hrefs := multistatusHrefs(t, body); status != 207 || len(hrefs) != 1 {
		t.Fatalf("Depth 0: %d %v", status, hrefs)
	}
	// The refusal is for collections (RFC 4918 9.1); of a file infinite
	// depth is the file alone.
	for _, hdr := range [][]string{nil, {"Depth", "infinity"}} {
		status, _, body = call(t, "PROPFIND", base+"/dav/l1/f.txt", nil, hdr...)
		if hrefs := multistatusHrefs(t, body); status != 207 || len(hrefs) != 1 || hrefs[0] != "/dav/l1/f.txt" {
			t.Fatalf("file, Depth %v: %d %v", hdr, status, hrefs)
		}
	}
	if status, _, body = call(t, "PROPFIND", base+"/dav/", nil, "Depth", "2"); status != 400 {
		t.Fatalf("Depth 2: %d %s", status, body)
	}
}

// WebDAV errors are RFC 4918's DAV:error in XML, carrying the stable code
// and a client-safe message; a client preferring JSON gets the service's
// JSON error. Neither is x/net's status text or a Go error string.
func TestDAVErrorsAreXMLOrJSON(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	base, _ := serve(t, files.Settings{Root: root})
	lock := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
	if status, _, body := call(t, "LOCK", base+"/dav/f", str(lock), "Depth", "0"); status != 200 {
		t.Fatalf("LOCK: %d %s", status, body)
	}
	for _, tc := range []struct {
		method, path, body string
		hdr                []string
		status             int
		code, details      string
		cond               string
	}{
		{"PROPFIND", "/missing", "", []string{"Depth", "0"}, 404, "NOT_FOUND", "path", ""},
		{"MKCOL", "/d", "", nil, 405, "METHOD_NOT_ALLOWED", "", ""},
		{"PROPFIND", "/d", "", []string{"Depth", "2"}, 400, "INVALID", "Depth", ""},
		{"COPY", "/f", "", []string{"Destination", "http://elsewhere.example/dav/g"}, 502, "FOREIGN_DESTINATION", "Destination", ""},
		{"COPY", "/f", "", []string{"Destination", "/dav/f"}, 403, "FORBIDDEN", "Destination", ""},
		{"PUT", "/f", "y", []string{"If", "(<opaquelocktoken:nope"}, 400, "INVALID", "If", ""},
		{"LOCK", "/f", lock, []string{"Depth", "0"}, 423, "LOCKED", "", "no-conflicting-lock"},
		{"PROPFIND", "/", "", nil, 403, "FORBIDDEN", "Depth", "propfind-finite-depth"},
		{"PROPFIND", "/d", "<not xml", []string{"Depth", "0"}, 400, "INVALID", "body", ""},
	} {
		name := tc.method + " " + tc.path
		status, h, body := call(t, tc.method, base+"/dav"+tc.path, str(tc.body), tc.hdr...)
		if status != tc.status || !strings.HasPrefix(h.Get("Content-Type"), "application/xml") {
			t.Errorf("%s: %d %q %s", name, status, h.Get("Content-Type"), body)
			continue
		}
		e := parseDAVError(t, body)
		got := map[string]string{}
		for _, a := range e.Any {
			if a.XMLName.Space == "urn:deckhand:error" {
				got[a.XMLName.Local] = a.Text
			}
		}
		if got["code"] != tc.code || got["details"] != tc.details || got["message"] == "" || strings.Contains(body, "webdav:") {
			t.Errorf("%s: %v\n%s", name, got, body)
		}
		if tc.cond != "" && !e.has("DAV:", tc.cond) {
			t.Errorf("%s: no DAV:%s\n%s", name, tc.cond, body)
		}
		// The same request preferring JSON.
		status, h, body = call(t, tc.method, base+"/dav"+tc.path, str(tc.body), append(tc.hdr, "Accept", "application/json")...)
		var je struct{ Code, Details, Message string }
		if err := json.Unmarshal([]byte(body), &je); err != nil || status != tc.status || je.Code != tc.code || je.Message == "" ||
			!strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s as JSON: %d %q %s", name, status, h.Get("Content-Type"), body)
		}
	}
	// HEAD carries the status without a body.
	if status, _, body := call(t, "HEAD", base+"/dav/missing", nil); status != 404 || body != "" {
		t.Errorf("HEAD: %d %q", status, body)
	}
}

// A Depth 1 PROPFIND streams its multistatus: the answer starts before
// the walk ends, and a client that stops reading holds the walk up rather
// than the service buffering the rest. The client reads only the headers
// and then removes the directory's last entries (in the order the walk
// takes them); the answer is many times what the sockets can hold, so a
// walk still waiting on the client finds them gone. A service that built
// the answer first would list them.
func TestPropfindStreamsItsAnswer(t *testing.T) {
	t.Parallel()
	root := memDir(t)
	// Long names that URL-escape threefold make each response element
	// large, so fewer files make an answer of many megabytes.
	long := strings.Repeat("é", 120)
	dir := filepath.Join(root, long)
	must(t, os.Mkdir(dir, 0o755))
	// What the kernel can hold in flight: the service's send buffer
	// grows up to tcp_wmem's maximum; the client's receive buffer is
	// pinned small below.
	inFlight := 4 << 20
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 3 {
			if n, err := strconv.Atoi(f[2]); err == nil {
				inFlight = n
			}
		}
	}
	const perEntry = 1800 // bytes of one response element, at least (measured below)
	n := 3*(inFlight+1<<20)/perEntry + 1
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%06d.txt", long, i)))
		must(t, err)
		f.Close()
	}
	d, err := os.Open(dir)
	must(t, err)
	order, err := d.Readdirnames(-1)
	d.Close()
	must(t, err)
	tail := order[len(order)-20:]
	base, _ := serve(t, files.Settings{Root: root})

	tr := &http.Transport{DisableCompression: true, DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		return errors.Join(err, serr)
	}}).DialContext}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("PROPFIND", base+"/dav/"+url.PathEscape(long)+"/", str(`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`))
	req.Header.Set("Depth", "1")
	resp, err := tr.RoundTrip(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != 207 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, name := range tail {
		must(t, os.Remove(filepath.Join(dir, name)))
	}
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	hrefs := multistatusHrefs(t, string(raw))
	if len(hrefs) < 2 || len(raw)/len(hrefs) < perEntry {
		t.Fatalf("%d responses, %d bytes: entries are smaller than the test assumes", len(hrefs), len(raw))
	}
	listed := map[string]bool{}
	for _, h := range hrefs {
		name, _ := url.PathUnescape(path.Base(h))
		listed[name] = true
	}
	for _, name := range tail {
		if listed[name] {
			t.Fatalf("%s, removed once the answer had started, is listed: the walk ended before the answer began", name)
		}
	}
	if !listed[order[0]] || len(hrefs) != n-len(tail)+1 {
		t.Fatalf("%d responses for %d entries", len(hrefs), n-len(tail))
	}
}

// linkTo reports where p links to, failing the test when it is no link.
func linkTo(t *testing.T, p string) string {
	t.Helper()
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatalf("%s is not a link: %v", p, err)
	}
	return target
}

// COPY copies links as links, as the REST copy does: never the tree
// behind them (a link to "." would otherwise copy without end).
func TestDAVCopyCopiesLinksAsLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "t", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "t", "sub", "s.txt"), []byte("behind the link"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "f.txt"), []byte("file"), 0o640))
	must(t, os.Symlink("../t", filepath.Join(root, "d", "ln")))
	must(t, os.Symlink("f.txt", filepath.Join(root, "d", "lf")))
	must(t, os.Symlink(".", filepath.Join(root, "d", "loop")))
	must(t, os.Symlink("nowhere", filepath.Join(root, "d", "dangling")))
	must(t, os.Symlink("t", filepath.Join(root, "top")))
	base, _ := serve(t, files.Settings{Root: root})

	if status, _, body := call(t, "COPY", base+"/dav/d", nil, "Destination", base+"/dav/c"); status != 201 {
		t.Fatalf("COPY d: %d %s", status, body)
	}
	for name, want := range map[string]string{"ln": "../t", "lf": "f.txt", "loop": ".", "dangling": "nowhere"} {
		if got := linkTo(t, filepath.Join(root, "c", name)); got != want {
			t.Errorf("c/%s links to %q, want %q", name, got, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "c", "f.txt")); err != nil || string(b) != "file" {
		t.Errorf("c/f.txt: %q %v", b, err)
	}
	// A link named by the request is copied itself too.
	if status, _, body := call(t, "COPY", base+"/dav/top", nil, "Destination", base+"/dav/top2"); status != 201 {
		t.Fatalf("COPY top: %d %s", status, body)
	}
	if got := linkTo(t, filepath.Join(root, "top2")); got != "t" {
		t.Errorf("top2 links to %q", got)
	}
	// Over an existing link (Overwrite: T) the new link replaces it,
	// and the old link's target is left alone.
	if status, _, body := call(t, "COPY", base+"/dav/d/lf", nil, "Destination", base+"/dav/top"); status != 204 {
		t.Fatalf("COPY over a link: %d %s", status, body)
	}
	if got := linkTo(t, filepath.Join(root, "top")); got != "f.txt" {
		t.Errorf("top links to %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "t", "sub", "s.txt")); string(b) != "behind the link" {
		t.Errorf("the target changed: %q", b)
	}
}

// DELETE removes a link, never what it points to; dangling links and
// links leading out of the root can be deleted too (they are in it).
func TestDAVDeleteRemovesLinksNotTargets(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "o.txt"), []byte("outside"), 0o644))
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "keep"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "keep", "k.txt"), []byte("kept"), 0o644))
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	must(t, os.Symlink("../keep", filepath.Join(root, "d", "ln")))
	must(t, os.Symlink("keep", filepath.Join(root, "lk")))
	must(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	base, _ := serve(t, files.Settings{Root: root})
	for _, p := range []string{"d", "lk", "dangling", "out"} {
		if status, _, body := call(t, "DELETE", base+"/dav/"+p, nil); status != 204 {
			t.Errorf("DELETE %s: %d %s", p, status, body)
		}
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep", "k.txt")); string(b) != "kept" {
		t.Errorf("a link's target was deleted: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "o.txt")); string(b) != "outside" {
		t.Errorf("outside the root changed: %q", b)
	}
}

// MOVE moves a link itself; Overwrite: F counts a dangling link at the
// destination as existing, and Overwrite: T replaces the link, not what
// it points to.
func TestDAVMoveMovesLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "keep"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "keep", "k.txt"), []byte("kept"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("f"), 0o644))
	must(t, os.Symlink("keep", filepath.Join(root, "lk")))
	must(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	base, _ := serve(t, files.Settings{Root: root})
	if status, _, body := call(t, "MOVE", base+"/dav/lk", nil, "Destination", base+"/dav/lk2"); status != 201 {
		t.Fatalf("MOVE lk: %d %s", status, body)
	}
	if got := linkTo(t, filepath.Join(root, "lk2")); got != "keep" {
		t.Errorf("lk2 links to %q", got)
	}
	if status, _, body := call(t, "MOVE", base+"/dav/f.txt", nil, "Destination", base+"/dav/dangling", "Overwrite", "F"); status != 412 {
		t.Errorf("MOVE onto a dangling link, Overwrite F: %d %s", status, body)
	}
	if status, _, body := call(t, "MOVE", base+"/dav/f.txt", nil, "Destination", base+"/dav/lk2", "Overwrite", "T"); status != 204 {
		t.Fatalf("MOVE onto a link: %d %s", status, body)
	}
	if fi, err := os.Lstat(filepath.Join(root, "lk2")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("lk2 is not the moved file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep", "k.txt")); string(b) != "kept" {
		t.Errorf("a link's target was touched: %q", b)
	}
}

// A fifo is never opened for reading (that waits for a writer forever):
// PROPFIND lists it, a download refuses it, COPY skips it as the REST
// copy does.
func TestFifosDoNotHangRequests(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "a.txt"), []byte("a"), 0o644))
	if err := syscall.Mkfifo(filepath.Join(root, "d", "p"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	base, _ := serve(t, files.Settings{Root: root})
	// A guard, not a timing: a hung request fails the test instead of
	// hanging the suite.
	client := &http.Client{Timeout: time.Minute}
	do := func(method, u string, hdr ...string) (int, string) {
		req, _ := http.NewRequest(method, base+u, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, u, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	status, body := do("PROPFIND", "/dav/d/", "Depth", "1")
	if hrefs := multistatusHrefs(t, body); status != 207 || len(hrefs) != 3 {
		t.Errorf("PROPFIND: %d %v", status, hrefs)
	}
	if status, body = do("GET", "/api/v1/files/content?path=/d/p"); status != 409 {
		t.Errorf("REST GET: %d %s", status, body)
	}
	if status, body = do("GET", "/dav/d/p"); status != 409 {
		t.Errorf("DAV GET: %d %s", status, body)
	}
	if status, body = do("COPY", "/dav/d", "Destination", base+"/dav/c"); status != 201 {
		t.Errorf("COPY: %d %s", status, body)
	}
	if _, err := os.Lstat(filepath.Join(root, "c", "p")); err == nil {
		t.Error("COPY copied the fifo")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "c", "a.txt")); string(b) != "a" {
		t.Errorf("COPY: c/a.txt %q", b)
	}
	// The REST routes that read files pass it by too.
	if status, body = do("GET", "/api/v1/files/search?path=/d&content=a"); status != 200 || !strings.Contains(body, `"/d/a.txt"`) {
		t.Errorf("search: %d %s", status, body)
	}
	if status, body = do("GET", "/api/v1/files/archive?path=/d&format=zip"); status != 200 {
		t.Errorf("archive: %d", status)
	}
	if status, body = do("GET", "/api/v1/files?path=/d/p"); status != 409 {
		t.Errorf("list: %d %s", status, body)
	}
}

// Locks live at most an hour: Infinite, no Timeout or a longer one is
// cut to Second-3600 (RFC 4918 10.7 leaves the choice to the server), in
// the Timeout header and the lockdiscovery of the answer, for exclusive
// and shared locks and refreshes alike; after the hour the lock is gone.
func TestDAVLocksExpireWithinAnHour(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clock := clockpkg.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	deps := platformtest.ServiceDeps(t, "files")
	deps.Clock = clock
	base, _ := serveWith(t, deps, files.Settings{Root: root})
	lockBody := func(scope string) io.Reader {
		return str(`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:` + scope + `/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>t</D:owner></D:lockinfo>`)
	}
	timeoutOf := func(body string) string {
		var p struct {
			Timeout string `xml:"lockdiscovery>activelock>timeout"`
		}
		if err := xml.Unmarshal([]byte(body), &p); err != nil {
			t.Fatalf("lock answer: %v\n%s", err, body)
		}
		return strings.TrimSpace(p.Timeout)
	}
	tokens := map[string]string{}
	for i, tc := range []struct{ scope, timeout, want string }{
		{"exclusive", "Infinite", "Second-3600"},
		{"exclusive", "", "Second-3600"},
		{"exclusive", "Second-4100000000", "Second-3600"},
		{"exclusive", "Infinite, Second-60", "Second-3600"},
		{"exclusive", "Second-60", "Second-60"},
		{"shared", "Infinite", "Second-3600"},
		{"shared", "Second-7200", "Second-3600"},
	} {
		p := fmt.Sprintf("/dav/l%d", i)
		hdr := []string{"Depth", "0"}
		if tc.timeout != "" {
			hdr = append(hdr, "Timeout", tc.timeout)
		}
		status, h, body := call(t, "LOCK", base+p, lockBody(tc.scope), hdr...)
		if status != 201 || h.Get("Timeout") != tc.want || timeoutOf(body) != tc.want {
			t.Fatalf("%s %q: %d Timeout %q, body %q", tc.scope, tc.timeout, status, h.Get("Timeout"), timeoutOf(body))
		}
		tokens[p] = h.Get("Lock-Token")
	}
	// A refresh asking for Infinite gets the hour too.
	status, h, body := call(t, "LOCK", base+"/dav/l0", nil, "If", "("+tokens["/dav/l0"]+")", "Timeout", "Infinite")
	if status != 200 || h.Get("Timeout") != "Second-3600" || timeoutOf(body) != "Second-3600" {
		t.Fatalf("refresh: %d %q %s", status, h.Get("Timeout"), body)
	}
	if status, _, body := call(t, "LOCK", base+"/dav/l0", lockBody("exclusive"), "Timeout", "Second-abc"); status != 400 || !strings.Contains(body, "Timeout") {
		t.Fatalf("bad Timeout: %d %s", status, body)
	}
	if status, _, _ := call(t, "PUT", base+"/dav/l1", str("x")); status != 423 {
		t.Fatalf("PUT to a locked resource: %d", status)
	}
	clock.Advance(time.Hour + time.Second)
	for i := range 7 {
		if status, _, body := call(t, "PUT", base+fmt.Sprintf("/dav/l%d", i), str("x")); status >= 300 {
			t.Errorf("l%d is still locked after an hour: %d %s", i, status, body)
		}
	}
}

// Error answers keep the connection when the request's body was read
// whole or there was none (clients probe many missing names), and close
// it when a body is left unread.
func TestDAVErrorsKeepTheConnection(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte("x"), 0o644))
	base, _ := serve(t, files.Settings{Root: root})
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	send := func(method, p string, body io.Reader, hdr ...string) int {
		req, _ := http.NewRequest(method, base+p, body)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 {
		for _, r := range []struct {
			method, path, body string
			hdr                []string
			status             int
		}{
			{"PROPFIND", "/dav/missing", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, []string{"Depth", "0"}, 404},
			{"PROPFIND", "/dav/", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, nil, 403},
			{"DELETE", "/dav/missing", "", nil, 404},
			{"MKCOL", "/dav/f", "", nil, 405},
		} {
			var b io.Reader
			if r.body != "" {
				b = str(r.body)
			}
			if got := send(r.method, r.path, b, r.hdr...); got != r.status {
				t.Fatalf("%s %s: %d", r.method, r.path, got)
			}
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for 12 error answers", n)
	}
	// A PUT refused before its body is read closes the connection.
	if got := send("PUT", "/dav/f", str(strings.Repeat("x", 1<<20)), "If-Match", `"stale"`); got != 412 {
		t.Fatalf("PUT: %d", got)
	}
	send("DELETE", "/dav/missing", nil)
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d connections after the refused PUT", n)
	}
	// So does a chunked one (no Content-Length).
	if got := send("PUT", "/dav/f", io.MultiReader(str(strings.Repeat("x", 1<<20))), "If-Match", `"stale"`); got != 412 {
		t.Fatalf("chunked PUT: %d", got)
	}
	send("DELETE", "/dav/missing", nil)
	if n := dials.Load(); n != 3 {
		t.Fatalf("%d connections after the refused chunked PUT", n)
	}
}
