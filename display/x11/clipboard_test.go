//go:build linux && cgo

package x11_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"strings"
	"testing"

	"deckhand/display/input"
)

func xpipe(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

func TestClipboardText(t *testing.T) {
	needX(t)
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB: INCR both ways
	for _, text := range []string{"hello clipboard", "ünïcödé ✓ 日本語\nsecond line", big} {
		// set through the service, read with xclip and xsel
		a := call(t, "POST", "/api/v1/display/clipboard", map[string]any{"text": text})
		mustOK(t, a, "set")
		if got := string(xpipe(t, nil, "xclip", "-o", "-selection", "clipboard")); got != text {
			t.Fatalf("xclip read %d bytes, want %d (%.40q)", len(got), len(text), got)
		}
		if got := string(xpipe(t, nil, "xsel", "--clipboard", "--output")); got != text {
			t.Fatalf("xsel read %d bytes, want %d", len(got), len(text))
		}
		// set with xsel (it forks and keeps serving), read through the service
		other := "from-xsel " + text
		xpipe(t, []byte(other), "xsel", "--clipboard", "--input")
		// xsel's daemon takes the selection just after its parent exits
		var v input.ClipboardView
		eventually(t, "service reads what xsel holds", func() bool {
			a = call(t, "GET", "/api/v1/display/clipboard", nil)
			mustOK(t, a, "get")
			a.decode(t, &v)
			return v.Text == other
		})
	}
	// the shape of docs/spec/operations.md: {"text"} and nothing else for text
	a := call(t, "GET", "/api/v1/display/clipboard", nil)
	var shape map[string]any
	a.decode(t, &shape)
	if len(shape) != 1 || shape["text"] == nil {
		t.Fatalf("GET clipboard = %.200s", a.body)
	}
	// the xsel left running exits when the service takes the clipboard back
	mustOK(t, call(t, "POST", "/api/v1/display/clipboard", map[string]any{"text": "final"}), "set")
}

func TestClipboardImage(t *testing.T) {
	needX(t)
	png := call(t, "GET", "/api/v1/display/screenshots?width=64&height=48", nil)
	mustOK(t, png, "shot")
	// an image put on the clipboard by xclip is read back byte for byte
	cmd := exec.Command("xclip", "-selection", "clipboard", "-t", "image/png", "-i")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	cmd.Stdin = bytes.NewReader(png.body)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var v input.ClipboardView
	eventually(t, "xclip owns the clipboard", func() bool {
		a := call(t, "GET", "/api/v1/display/clipboard", nil)
		a.decode(t, &v)
		return v.HasImage
	})
	a := call(t, "GET", "/api/v1/display/clipboard?format=png", nil)
	mustOK(t, a, "get png")
	if !bytes.Equal(a.body, png.body) || a.header.Get("Content-Type") != "image/png" {
		t.Fatalf("clipboard image differs (%d vs %d bytes, %s)", len(a.body), len(png.body), a.header.Get("Content-Type"))
	}
	// and one the service sets is what xclip reads
	a = call(t, "POST", "/api/v1/display/clipboard", map[string]any{"image_base64": base64.StdEncoding.EncodeToString(png.body)})
	mustOK(t, a, "set image")
	if got := xpipe(t, nil, "xclip", "-o", "-selection", "clipboard", "-t", "image/png"); !bytes.Equal(got, png.body) {
		t.Fatalf("xclip read a different image (%d bytes)", len(got))
	}
	targets := string(xpipe(t, nil, "xclip", "-o", "-selection", "clipboard", "-t", "TARGETS"))
	if !strings.Contains(targets, "image/png") {
		t.Fatalf("TARGETS = %q", targets)
	}
	a = call(t, "POST", "/api/v1/display/clipboard", map[string]any{"text": "x", "image_base64": "AAAA"})
	if a.status != 400 {
		t.Fatalf("text and image: %d %s", a.status, a.body)
	}
	mustOK(t, call(t, "POST", "/api/v1/display/clipboard", map[string]any{"text": ""}), "clear")
	a = call(t, "GET", "/api/v1/display/clipboard?format=png", nil)
	if a.status != 404 {
		t.Fatalf("png of a text clipboard: %d", a.status)
	}
}
