//go:build linux && cgo

package x11_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"deckhand/display/takeover"
	"deckhand/platform/platformtest"
)

// rfb is a minimal VNC client over the takeover WebSocket: it does the
// handshake (no authentication: the unix socket is the access control) and
// reads the server's screen size.
type rfb struct {
	ws            *websocket.Conn
	buf           []byte
	width, height int
}

func dialRFB(t *testing.T, mode string) *rfb {
	t.Helper()
	u := "ws" + strings.TrimPrefix(baseURL, "http") + "/api/v1/display/vnc/websockify?mode=" + mode
	ws, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"Sec-WebSocket-Protocol": {"binary"}})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", u, err, resp)
	}
	t.Cleanup(func() { ws.Close() })
	c := &rfb{ws: ws}
	if v := string(c.read(t, 12)); v != "RFB 003.008\n" {
		t.Fatalf("version %q", v)
	}
	c.write(t, []byte("RFB 003.008\n"))
	n := int(c.read(t, 1)[0])
	types := c.read(t, n)
	if !strings.Contains(string(types), "\x01") {
		t.Fatalf("security types %v: no None", types)
	}
	c.write(t, []byte{1})
	if r := c.read(t, 4); binary.BigEndian.Uint32(r) != 0 {
		t.Fatalf("security result %v", r)
	}
	c.write(t, []byte{1}) // shared
	init := c.read(t, 24)
	c.width, c.height = int(binary.BigEndian.Uint16(init[0:])), int(binary.BigEndian.Uint16(init[2:]))
	c.read(t, int(binary.BigEndian.Uint32(init[20:]))) // the desktop's name
	// as a viewer does: raw encoding, then a first update request
	c.write(t, []byte{2, 0, 0, 1, 0, 0, 0, 0})
	req := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(req[6:], uint16(c.width))
	binary.BigEndian.PutUint16(req[8:], uint16(c.height))
	c.write(t, req)
	// a viewer reads what the server sends (else the server blocks on it)
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	return c
}

func (c *rfb) read(t *testing.T, n int) []byte {
	t.Helper()
	for len(c.buf) < n {
		_ = c.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		c.buf = append(c.buf, data...)
	}
	out := c.buf[:n:n]
	c.buf = c.buf[n:]
	return out
}

func (c *rfb) write(t *testing.T, b []byte) {
	t.Helper()
	if err := c.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// key sends a key press and release (RFB KeyEvent).
func (c *rfb) key(t *testing.T, sym uint32) {
	for _, down := range []byte{1, 0} {
		m := []byte{4, down, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(m[4:], sym)
		c.write(t, m)
	}
}

// TestTakeover: a person's control session reaches the desktop (the screen's
// size in the VNC handshake, typing that lands in an xterm), the agent's
// input is refused while they drive and serves again after; view-only
// sessions leave the agent alone; a paused agent is refused until it
// resumes.
func TestTakeover(t *testing.T) {
	needX(t)
	out := filepath.Join(t.TempDir(), "typed")
	w, _ := startXterm(t, "takeover-xterm", "-e", "sh", "-c", "read line; echo \"$line\" > "+out+"; sleep 60")
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": w.ID}), "focus")

	view := dialRFB(t, "view")
	if view.width != 1920 || view.height != 1080 {
		t.Fatalf("view session's screen %dx%d", view.width, view.height)
	}
	var st takeover.Takeover
	call(t, "GET", "/api/v1/display/takeover", nil).decode(t, &st)
	if st.Viewers != 1 || st.Drivers != 0 {
		t.Fatalf("takeover with a viewer: %+v", st)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/mouse/move", map[string]any{"x": w.X + 10, "y": w.Y + 10}), "agent input beside a viewer")

	ctl := dialRFB(t, "control")
	if ctl.width != 1920 || ctl.height != 1080 {
		t.Fatalf("control session's screen %dx%d", ctl.width, ctl.height)
	}
	a := call(t, "POST", "/api/v1/display/mouse/move", map[string]any{"x": 5, "y": 5})
	if e := a.errCode(t); a.status != 409 || e.Code != takeover.CodeTakenOver {
		t.Fatalf("agent input while a person drives: %d %s", a.status, a.body)
	}
	for _, r := range "hello" {
		ctl.key(t, uint32(r))
	}
	ctl.key(t, 0xff0d) // Return
	eventually(t, "the person's typing in the xterm", func() bool {
		b, err := os.ReadFile(out)
		return err == nil && string(b) == "hello\n"
	})
	ctl.ws.Close()
	eventually(t, "the agent's input back", func() bool {
		return call(t, "POST", "/api/v1/display/mouse/move", map[string]any{"x": 5, "y": 5}).status == 200
	})

	a = call(t, "POST", "/api/v1/display/takeover", map[string]any{"reason": "solve the captcha"})
	mustOK(t, a, "pause")
	a.decode(t, &st)
	if !st.Paused || st.Reason != "solve the captcha" || st.Since == nil {
		t.Fatalf("paused: %+v", st)
	}
	a = call(t, "POST", "/api/v1/display/input/batch", map[string]any{"steps": []any{map[string]any{"action": "move", "x": 1, "y": 1}}})
	if e := a.errCode(t); a.status != 409 || e.Code != takeover.CodeTakenOver || !strings.Contains(e.Message, "solve the captcha") {
		t.Fatalf("batch while paused: %d %s", a.status, a.body)
	}
	mustOK(t, call(t, "DELETE", "/api/v1/display/takeover", nil), "resume")
	mustOK(t, call(t, "POST", "/api/v1/display/mouse/move", map[string]any{"x": 5, "y": 5}), "agent input after resume")

	// the page opens noVNC on this service's WebSocket; the client's files are served
	a = call(t, "GET", "/api/v1/display/vnc/?mode=view", nil)
	mustOK(t, a, "page")
	if !strings.Contains(string(a.body), `view_only: "true"`) || !strings.Contains(string(a.body), "websockify?mode=view") {
		t.Errorf("page:\n%s", a.body)
	}
	if a := call(t, "GET", "/api/v1/display/vnc/vnc.html", nil); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
		t.Errorf("vnc.html: %d %s", a.status, a.header)
	}
	if a := call(t, "GET", "/api/v1/display/vnc/core/rfb.js", nil); a.status != 200 || !strings.Contains(a.header.Get("Content-Type"), "javascript") {
		t.Errorf("rfb.js: %d %s", a.status, a.header)
	}
	if a := call(t, "GET", "/api/v1/display/vnc/..%2f..%2fetc/passwd", nil); a.status != 404 {
		t.Errorf("traversal: %d", a.status)
	}
}

// TestTakeoverInChromium opens the takeover page in headless Chromium: its
// canvas shows what the display API's screenshot shows, typing in it
// reaches an xterm, and a page of another origin can neither read the page
// nor open its WebSocket.
func TestTakeoverInChromium(t *testing.T) {
	needX(t)
	node, chromium, dir := platformtest.BrowserTools(t, "../../scripts/e2e")
	out := filepath.Join(t.TempDir(), "typed")
	w, _ := startXterm(t, "chromium-xterm", "-e", "sh", "-c", "read line; echo \"$line\" > "+out+"; sleep 60")
	mustOK(t, call(t, "POST", "/api/v1/display/window/focus", map[string]any{"id": w.ID}), "focus")

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>elsewhere</title>"))
	}))
	t.Cleanup(evil.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "vnc-browser.mjs"), baseURL+"/api/v1/display/vnc/", evil.URL+"/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr platformtest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	expect := func(want string) []string {
		t.Helper()
		var seen []string
		for lines.Scan() {
			if lines.Text() == want {
				return seen
			}
			seen = append(seen, lines.Text())
		}
		t.Fatalf("the browser never said %q (said %q); stderr: %s", want, seen, stderr.String())
		return nil
	}
	say := func(s string) { _, _ = io.WriteString(stdin, s+"\n") }
	expect("READY")

	// the canvas is the desktop: compare with the API's screenshot (the
	// canvas catches up with updates, so ask again until they agree)
	snap := filepath.Join(t.TempDir(), "canvas.png")
	var diff float64
	for try := 0; try < 50; try++ {
		say("SNAP " + snap)
		expect("SNAPPED")
		a := call(t, "GET", "/api/v1/display/screenshots", nil)
		mustOK(t, a, "screenshot")
		if diff = pixelDiff(t, snap, a.body); diff < 0.002 {
			break
		}
	}
	if diff >= 0.002 {
		t.Fatalf("the canvas differs from the screenshot in %.2f%% of its pixels", diff*100)
	}

	say("TYPE typed-in-chromium")
	expect("TYPED")
	eventually(t, "the browser's typing in the xterm", func() bool {
		b, err := os.ReadFile(out)
		return err == nil && string(b) == "typed-in-chromium\n"
	})

	say("EVIL")
	results := expect("EVIL DONE")
	if strings.Join(results, ",") != "fetch blocked,ws refused" {
		t.Errorf("from another origin: %q", results)
	}
	say("QUIT")
}

// pixelDiff is the share of pixels that differ (any channel by more than
// 24) between the PNG at path and the PNG b.
func pixelDiff(t *testing.T, path string, b []byte) float64 {
	t.Helper()
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x, err := png.Decode(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	y, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if x.Bounds() != y.Bounds() {
		t.Fatalf("canvas %v, screenshot %v", x.Bounds(), y.Bounds())
	}
	differ, total := 0, 0
	r := x.Bounds()
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			r1, g1, b1, _ := x.At(px, py).RGBA()
			r2, g2, b2, _ := y.At(px, py).RGBA()
			if absDiff(r1, r2) > 24<<8 || absDiff(g1, g2) > 24<<8 || absDiff(b1, b2) > 24<<8 {
				differ++
			}
			total++
		}
	}
	return float64(differ) / float64(total)
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
