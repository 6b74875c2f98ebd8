//go:build linux && cgo

package x11_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kbinani/screenshot"

	"deckhand/display/desktop"
	"deckhand/display/input"
)

// BenchmarkDisplayReport measures, side by side in one run on the test
// desktop (1920x1080 Xvfb, openbox, xterms full of text), full-screen
// capture+encode through this driver, kbinani/screenshot with the standard
// library encoders, ImageMagick import and scrot; the pointer round trip;
// and a 100-step batch. It prints medians and p99 (run it with
// scripts/bench/display.sh, or go test -run '^$' -bench DisplayReport
// -benchtime 1x ./display/x11/).
func BenchmarkDisplayReport(b *testing.B) {
	if skipWhy != "" {
		b.Skip(skipWhy)
	}
	rounds := 25
	if v := os.Getenv("DISPLAY_BENCH_ROUNDS"); v != "" {
		fmt.Sscan(v, &rounds)
	}
	// content: a large xterm full of text, as in performance-notes.md
	cmd := exec.Command("xterm", "-geometry", "200x60+300+100", "-title", "bench-content", "-e", "bash", "-c",
		"ls -la --color=always /usr/lib /usr/bin | head -300; sleep 600")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	os.Setenv("DISPLAY", display) // kbinani/screenshot reads $DISPLAY
	full := desktop.Rect{Width: 1920, Height: 1080}
	ctx := context.Background()
	tmp := b.TempDir()

	type row struct {
		name  string
		bytes int
		run   func() (int, error)
	}
	shot := func(format string, q int) func() (int, error) {
		return func() (int, error) {
			out, err := driver.Screenshot(ctx, desktop.ScreenshotOptions{Format: format, Quality: q, Region: full, Scale: 1})
			return len(out), err
		}
	}
	httpShot := func(query string) func() (int, error) {
		return func() (int, error) {
			a := call(&testing.T{}, "GET", "/api/v1/display/screenshots?"+query, nil)
			if a.status != 200 {
				return 0, fmt.Errorf("status %d", a.status)
			}
			return len(a.body), nil
		}
	}
	runTool := func(name string, args ...string) func() (int, error) {
		return func() (int, error) {
			c := exec.Command(name, args...)
			c.Env = append(os.Environ(), "DISPLAY="+display)
			out, err := c.Output()
			if err != nil {
				return 0, err
			}
			if len(out) == 0 && name == "scrot" {
				st, err := os.Stat(args[len(args)-1])
				if err != nil {
					return 0, err
				}
				return int(st.Size()), nil
			}
			return len(out), nil
		}
	}
	rows := []row{
		{name: "driver PNG (MIT-SHM + parallel Sub/deflate-1)", run: shot("png", 80)},
		{name: "driver JPEG q80 (MIT-SHM + libjpeg-turbo BGRX)", run: shot("jpeg", 80)},
		{name: "HTTP GET screenshots PNG", run: httpShot("")},
		{name: "HTTP GET screenshots JPEG q80", run: httpShot("format=jpeg&quality=80")},
		{name: "HTTP GET screenshots JPEG q80 scale=0.5", run: httpShot("format=jpeg&quality=80&scale=0.5")},
		{name: "kbinani CaptureRect (capture only)", run: func() (int, error) {
			img, err := screenshot.CaptureRect(image.Rect(0, 0, 1920, 1080))
			if err != nil {
				return 0, err
			}
			return len(img.Pix), nil
		}},
		{name: "kbinani + image/png BestSpeed", run: func() (int, error) {
			img, err := screenshot.CaptureRect(image.Rect(0, 0, 1920, 1080))
			if err != nil {
				return 0, err
			}
			var buf bytes.Buffer
			err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
			return buf.Len(), err
		}},
		{name: "kbinani + image/jpeg q80", run: func() (int, error) {
			img, err := screenshot.CaptureRect(image.Rect(0, 0, 1920, 1080))
			if err != nil {
				return 0, err
			}
			var buf bytes.Buffer
			err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80})
			return buf.Len(), err
		}},
		{name: "import -window root png:-", run: runTool("import", "-window", "root", "png:-")},
		{name: "import -window root -quality 80 jpeg:-", run: runTool("import", "-window", "root", "-quality", "80", "jpeg:-")},
		{name: "scrot (PNG file)", run: runTool("scrot", "-o", filepath.Join(tmp, "scrot.png"))},
		{name: "scrot -q 80 (JPEG file)", run: runTool("scrot", "-o", "-q", "80", filepath.Join(tmp, "scrot.jpg"))},
	}
	b.ResetTimer()
	var report strings.Builder
	fmt.Fprintf(&report, "\n1920x1080 capture+encode, %d rounds each, interleaved\n", rounds)
	fmt.Fprintf(&report, "%-48s %10s %10s %10s\n", "path", "median ms", "p90 ms", "bytes")
	times := make([][]time.Duration, len(rows))
	sizes := make([]int, len(rows))
	for r := 0; r < rounds; r++ {
		for i, rw := range rows { // interleaved so load drifts hit every row alike
			start := time.Now()
			n, err := rw.run()
			if err != nil {
				b.Fatalf("%s: %v", rw.name, err)
			}
			times[i] = append(times[i], time.Since(start))
			sizes[i] = n
		}
	}
	med := map[string]float64{}
	for i, rw := range rows {
		m, p90 := quantile(times[i], 0.5), quantile(times[i], 0.9)
		med[rw.name] = m
		fmt.Fprintf(&report, "%-48s %10.1f %10.1f %10d\n", rw.name, m, p90, sizes[i])
	}
	fmt.Fprintf(&report, "import/driver PNG: %.1fx   import/driver JPEG: %.1fx   scrot/driver PNG: %.1fx\n",
		med[rows[8].name]/med[rows[0].name], med[rows[9].name]/med[rows[1].name], med[rows[10].name]/med[rows[0].name])

	// pointer: move, then read back where the server put it
	var rt []time.Duration
	for i := 0; i < 2000; i++ {
		p := desktop.Point{X: 100 + i%1000, Y: 100 + i%700}
		start := time.Now()
		if err := driver.MoveTo(p); err != nil {
			b.Fatal(err)
		}
		got, err := driver.Pointer()
		if err != nil || got != p {
			b.Fatalf("pointer %v %v", got, err)
		}
		rt = append(rt, time.Since(start))
	}
	var rtMove, rtHTTP []time.Duration
	for i := 0; i < 1000; i++ {
		start := time.Now()
		a := call(&testing.T{}, "POST", "/api/v1/display/mouse/move", map[string]int{"x": 200 + i, "y": 300})
		if a.status != 200 || !strings.Contains(string(a.body), fmt.Sprintf(`"x":%d`, 200+i)) {
			b.Fatalf("move: %d %s", a.status, a.body)
		}
		rtMove = append(rtMove, time.Since(start))
	}
	for i := 0; i < 500; i++ {
		start := time.Now()
		a := call(&testing.T{}, "POST", "/api/v1/display/mouse/move", map[string]int{"x": 200 + i, "y": 300})
		if a.status != 200 {
			b.Fatalf("move: %d", a.status)
		}
		a = call(&testing.T{}, "GET", "/api/v1/display/mouse/location", nil)
		if a.status != 200 {
			b.Fatalf("location: %d", a.status)
		}
		rtHTTP = append(rtHTTP, time.Since(start))
	}
	fmt.Fprintf(&report, "\npointer move + location round trip\n")
	fmt.Fprintf(&report, "%-48s %10.3f median %8.3f p99 ms (n=%d)\n", "driver MoveTo+Pointer", quantile(rt, 0.5), quantile(rt, 0.99), len(rt))
	fmt.Fprintf(&report, "%-48s %10.3f median %8.3f p99 ms (n=%d)\n", "HTTP POST mouse/move (answers the read-back)", quantile(rtMove, 0.5), quantile(rtMove, 0.99), len(rtMove))
	fmt.Fprintf(&report, "%-48s %10.3f median %8.3f p99 ms (n=%d)\n", "HTTP POST mouse/move + GET mouse/location", quantile(rtHTTP, 0.5), quantile(rtHTTP, 0.99), len(rtHTTP))

	// 100-step batch: moves, clicks and key presses on the desktop
	steps := make([]input.Step, 0, 100)
	for i := 0; i < 100; i++ {
		x, y := 1600+i%300, 950+i%120 // the bare desktop, clear of the xterms
		switch i % 4 {
		case 0, 1:
			steps = append(steps, input.Step(fmt.Sprintf(`{"action":"move","x":%d,"y":%d}`, x, y)))
		case 2:
			steps = append(steps, input.Step(fmt.Sprintf(`{"action":"click","x":%d,"y":%d}`, x, y)))
		case 3:
			steps = append(steps, input.Step(`{"action":"key","key":"shift"}`))
		}
	}
	var bt, btHTTP []time.Duration
	body := map[string]any{"steps": steps}
	for r := 0; r < 20; r++ {
		start := time.Now()
		res, err := service.Input.RunBatch(ctx, input.Batch{Steps: steps})
		if err != nil || !res.OK || res.Completed != 100 {
			b.Fatalf("batch %+v %v", res, err)
		}
		bt = append(bt, time.Since(start))
		start = time.Now()
		if a := call(&testing.T{}, "POST", "/api/v1/display/input/batch", body); a.status != 200 {
			b.Fatalf("batch: %d", a.status)
		}
		btHTTP = append(btHTTP, time.Since(start))
	}
	fmt.Fprintf(&report, "\n100-step batch (50 moves, 25 clicks, 25 key taps)\n")
	fmt.Fprintf(&report, "%-48s %10.2f median %8.2f p90 ms\n", "Service.RunBatch", quantile(bt, 0.5), quantile(bt, 0.9))
	fmt.Fprintf(&report, "%-48s %10.2f median %8.2f p90 ms\n", "HTTP POST input/batch", quantile(btHTTP, 0.5), quantile(btHTTP, 0.9))
	b.StopTimer()
	b.Log(report.String())
	fmt.Println(report.String())
}

func quantile(d []time.Duration, q float64) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q * float64(len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}
