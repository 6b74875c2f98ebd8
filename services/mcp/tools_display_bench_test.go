package mcp_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"deckhand/platform/platformtest"
)

// BenchmarkDisplayToolRoundTrip measures, through the gateway and in one
// run on Xvfb, display_move's round trip as a tool against the display's
// own REST call for the same move (POST .../mouse/move). Each reports
// p50-us and p99-us; added-p50-us (on the tool) is its p50 less the REST
// call's, the cost the MCP layer adds.
func BenchmarkDisplayToolRoundTrip(b *testing.B) {
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		b.Skip("deckhand-display is not beside deckhand (make build; DECKHAND_BIN=$PWD/bin)")
	}
	display := platformtest.StartXvfb(b, "1024x768x24")
	a := startAgentEnv(b, []string{"DISPLAY=" + display}, "display,mcp", "--display", display)
	waitService(b, a, 4)
	s := connect(b, a.endpoint(), allKey, nil)
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	rest := func() error {
		req, _ := http.NewRequest("POST", a.gw+"/_/display/api/v1/display/mouse/move", strings.NewReader(`{"x":10,"y":20}`))
		req.Header.Set("X-Key", allKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("REST mouse/move: %d", resp.StatusCode)
		}
		return nil
	}
	tool := func() error {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "display_move", Arguments: map[string]any{"x": 10, "y": 20}})
		if err == nil && res.IsError {
			b.Fatalf("display_move: %s", text(res))
		}
		return err
	}
	benchLatencies(b, "rest-mouse-move", []string{"mcp-display_move"}, []latencyCase{{"rest-mouse-move", rest}, {"mcp-display_move", tool}})
}

// BenchmarkDisplayScreenshotTool measures, through the gateway and in one
// run on Xvfb, display_screenshot's round trip (a PNG scaled to 800 of a
// 1024-pixel screen, answered as image content) against the display's own
// REST call for the same image (GET .../screenshots?scale=0.78125).
// It logs the PNG's size (-test.v).
func BenchmarkDisplayScreenshotTool(b *testing.B) {
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "deckhand-display")); err != nil {
		b.Skip("deckhand-display is not beside deckhand (make build; DECKHAND_BIN=$PWD/bin)")
	}
	display := platformtest.StartXvfb(b, "1024x768x24")
	a := startAgentEnv(b, []string{"DISPLAY=" + display}, "display,mcp", "--display", display)
	waitService(b, a, 4)
	// A background of noise, so the PNG is as large as a busy desktop's
	// (an empty screen's is a few hundred bytes). Set once the display
	// service holds the X server open: Xvfb resets when its last client
	// leaves.
	bits := make([]string, 256*256/8)
	for i := range bits {
		bits[i] = fmt.Sprintf("0x%02x", rand.IntN(256))
	}
	xbm := filepath.Join(b.TempDir(), "noise.xbm")
	if err := os.WriteFile(xbm, []byte("#define n_width 256\n#define n_height 256\nstatic unsigned char n_bits[] = {\n"+
		strings.Join(bits, ",")+"};\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("xsetroot", "-display", display, "-bitmap", xbm, "-fg", "#3060c0", "-bg", "#f0e0a0").CombinedOutput(); err != nil {
		b.Fatalf("xsetroot: %v %s", err, out)
	}
	s := connect(b, a.endpoint(), allKey, nil)
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	var pngBytes int64
	rest := func() error {
		req, _ := http.NewRequest("GET", a.gw+"/_/display/api/v1/display/screenshots?scale=0.78125", nil)
		req.Header.Set("X-Key", allKey)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		pngBytes, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("REST screenshots: %d", resp.StatusCode)
		}
		return nil
	}
	tool := func() error {
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "display_screenshot", Arguments: map[string]any{"max_width": 800}})
		if err == nil && res.IsError {
			b.Fatalf("display_screenshot: %s", text(res))
		}
		return err
	}
	benchLatencies(b, "rest-screenshot", []string{"mcp-display_screenshot"}, []latencyCase{{"rest-screenshot", rest}, {"mcp-display_screenshot", tool}})
	b.Logf("the PNG: %d bytes", pngBytes)
}
