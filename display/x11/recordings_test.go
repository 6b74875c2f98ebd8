//go:build linux && cgo

package x11_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/display/api"
	"deckhand/display/recordings"
)

// probe is what ffprobe says of a video.
type probe struct {
	Duration float64
	Size     int64
	Width    int
	Height   int
	Codec    string
}

func ffprobe(t *testing.T, video []byte) probe {
	t.Helper()
	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Fatal("ffprobe is missing (scripts/setup.sh installs ffmpeg)")
	}
	path := filepath.Join(t.TempDir(), "video")
	if err := os.WriteFile(path, video, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration,size:stream=width,height,codec_name",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var r struct {
		Format  struct{ Duration, Size string }
		Streams []struct {
			Width, Height int
			CodecName     string `json:"codec_name"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Streams) != 1 {
		t.Fatalf("ffprobe said %s (%v)", out, err)
	}
	p := probe{Width: r.Streams[0].Width, Height: r.Streams[0].Height, Codec: r.Streams[0].CodecName}
	p.Duration, _ = strconv.ParseFloat(r.Format.Duration, 64)
	p.Size, _ = strconv.ParseInt(r.Format.Size, 10, 64)
	return p
}

// stopped polls the recording until ffmpeg has finished it.
func stopped(t *testing.T, id string) recordings.Recording {
	t.Helper()
	return waitFor(t, id, "still runs", func(r recordings.Recording) bool { return r.Status != recordings.RecordingActive })
}

// grown polls the recording until ffmpeg has written some of it (frames,
// not only the container's header): a recording stopped before its first
// frame is empty by design, and on a loaded machine ffmpeg may take
// seconds to start.
func grown(t *testing.T, id string) {
	t.Helper()
	waitFor(t, id, "wrote nothing", func(r recordings.Recording) bool { return r.Bytes > 4<<10 })
}

// waitFor polls the recordings list until recording id meets cond.
func waitFor(t *testing.T, id, failure string, cond func(recordings.Recording) bool) recordings.Recording {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var list []recordings.Recording
		call(t, "GET", "/api/v1/display/recordings", nil).decode(t, &list)
		for _, r := range list {
			if r.ID == id && cond(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("recording %s %s: %+v", id, failure, list)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRecordingWithTimeline records 10 s while the test clicks and types:
// ffprobe finds a 10 s video of the screen's size, and the timeline holds
// each action, in order, as JSON and as WebVTT.
func TestRecordingWithTimeline(t *testing.T) {
	needX(t)
	w, _ := startXterm(t, "rec-xterm")
	a := call(t, "POST", "/api/v1/display/recordings", map[string]any{"max_seconds": 10, "framerate": 10})
	if a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	var rec recordings.Recording
	a.decode(t, &rec)
	if rec.Status != recordings.RecordingActive || rec.Format != "mp4" || rec.MaxSeconds != 10 {
		t.Fatalf("started %+v", rec)
	}
	t.Cleanup(func() { call(t, "DELETE", "/api/v1/display/recordings/"+rec.ID, nil) })
	if a := call(t, "POST", "/api/v1/display/recordings", map[string]any{}); a.status != 409 {
		t.Errorf("a second recording: %d %s, want 409", a.status, a.body)
	}
	if a := call(t, "GET", "/api/v1/display/recordings/"+rec.ID, nil); a.status != 409 {
		t.Errorf("video while recording: %d, want 409", a.status)
	}
	cx, cy := w.X+w.Width/2, w.Y+w.Height/2
	mustOK(t, call(t, "POST", "/api/v1/display/mouse/click", map[string]any{"x": cx, "y": cy}), "click")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": "echo recorded"}), "type")
	mustOK(t, call(t, "POST", "/api/v1/display/keyboard/key", map[string]any{"key": "Return"}), "key")
	mustOK(t, call(t, "POST", "/api/v1/display/input/batch", map[string]any{"steps": []any{
		map[string]any{"action": "move", "x": 10, "y": 10}, map[string]any{"action": "click", "x": cx, "y": cy}}}), "batch")

	rec = stopped(t, rec.ID)
	if rec.Status != recordings.RecordingStopped || rec.StopReason != recordings.StoppedByTimeLimit || rec.Events != 5 {
		t.Fatalf("after 10 s: %+v", rec)
	}
	a = call(t, "GET", "/api/v1/display/recordings/"+rec.ID, nil)
	mustOK(t, a, "video")
	if ct := a.header.Get("Content-Type"); ct != "video/mp4" {
		t.Errorf("Content-Type %q", ct)
	}
	p := ffprobe(t, a.body)
	if p.Duration < 9 || p.Duration > 10.5 || p.Width != 1920 || p.Height != 1080 || p.Codec != "h264" ||
		p.Size != int64(len(a.body)) || p.Size != rec.Bytes {
		t.Errorf("ffprobe: %+v; recording %+v; %d bytes served", p, rec, len(a.body))
	}

	var tl recordings.Timeline
	call(t, "GET", "/api/v1/display/recordings/"+rec.ID+"/timeline", nil).decode(t, &tl)
	want := []string{"click", "type", "key", "move", "click"}
	if len(tl.Events) != len(want) {
		t.Fatalf("timeline = %+v", tl.Events)
	}
	for i, e := range tl.Events {
		if e.Action != want[i] || !e.OK || (i > 0 && e.OffsetMS < tl.Events[i-1].OffsetMS) || e.OffsetMS > 10000 {
			t.Errorf("event %d = %+v, want %s in order", i, e, want[i])
		}
	}
	if !strings.Contains(string(tl.Events[1].Args), `"text":"echo recorded"`) ||
		!strings.Contains(string(tl.Events[0].Args), fmt.Sprintf(`"x":%d`, cx)) {
		t.Errorf("args: %s / %s", tl.Events[0].Args, tl.Events[1].Args)
	}
	a = call(t, "GET", "/api/v1/display/recordings/"+rec.ID+"/timeline.vtt", nil)
	mustOK(t, a, "vtt")
	vtt := string(a.body)
	if !strings.HasPrefix(vtt, "WEBVTT\n") || strings.Count(vtt, " --> ") != 5 || !strings.Contains(vtt, `type {"text":"echo recorded"`) ||
		!strings.HasPrefix(a.header.Get("Content-Type"), "text/vtt") {
		t.Errorf("vtt:\n%s", vtt)
	}

	if a := call(t, "DELETE", "/api/v1/display/recordings/"+rec.ID, nil); a.status != 204 {
		t.Errorf("delete: %d %s", a.status, a.body)
	}
	if a := call(t, "GET", "/api/v1/display/recordings/"+rec.ID+"/timeline", nil); a.status != 404 {
		t.Errorf("timeline after delete: %d", a.status)
	}
}

// A recording stops at its size limit, or when asked, and its video is
// complete either way.
func TestRecordingLimitsAndStop(t *testing.T) {
	needX(t)
	startXterm(t, "rec-limits")
	a := call(t, "POST", "/api/v1/display/recordings", map[string]any{"format": "webm", "max_bytes": 1 << 20, "framerate": 30})
	if a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	var rec recordings.Recording
	a.decode(t, &rec)
	t.Cleanup(func() { call(t, "DELETE", "/api/v1/display/recordings/"+rec.ID, nil) })
	// the screen must change for the encoder to have something to say
	for i := 0; i < 2000; i++ {
		if r := stoppedNow(t, rec.ID); r {
			break
		}
		call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": fmt.Sprintf("line %d of changing text\n", i)})
	}
	rec = stopped(t, rec.ID)
	// ffmpeg writes the frames in flight and the index past its -fs limit:
	// VP9 holds up to 25 frames back, a few hundred KiB here, and more on a
	// loaded machine.
	if rec.StopReason != recordings.StoppedBySizeLimit || rec.Bytes < 1<<20 || rec.Bytes > 2<<20 {
		t.Fatalf("size limit: %+v", rec)
	}
	a = call(t, "GET", "/api/v1/display/recordings/"+rec.ID, nil)
	mustOK(t, a, "video")
	if p := ffprobe(t, a.body); p.Codec != "vp9" || p.Width != 1920 {
		t.Errorf("webm: %+v", p)
	}

	a = call(t, "POST", "/api/v1/display/recordings", map[string]any{"max_seconds": 600})
	if a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	a.decode(t, &rec)
	t.Cleanup(func() { call(t, "DELETE", "/api/v1/display/recordings/"+rec.ID, nil) })
	grown(t, rec.ID)
	a = call(t, "POST", "/api/v1/display/recordings/"+rec.ID+"/stop", map[string]any{})
	mustOK(t, a, "stop")
	a.decode(t, &rec)
	if rec.Status != recordings.RecordingStopped || rec.StopReason != recordings.StoppedByRequest || rec.StoppedAt == nil {
		t.Fatalf("stopped: %+v", rec)
	}
	a = call(t, "GET", "/api/v1/display/recordings/"+rec.ID, nil)
	mustOK(t, a, "video")
	if p := ffprobe(t, a.body); p.Codec != "h264" || p.Duration <= 0 {
		t.Errorf("stopped early: %+v", p)
	}
}

func stoppedNow(t *testing.T, id string) bool {
	var list []recordings.Recording
	call(t, "GET", "/api/v1/display/recordings", nil).decode(t, &list)
	for _, r := range list {
		if r.ID == id {
			return r.Status != recordings.RecordingActive
		}
	}
	return true
}

// BenchmarkRecordingOverhead takes full-screen PNG screenshots through the
// HTTP API without and then with a recording (mp4, 10 fps) running, in one
// run, and reports their p50 and p90 and the CPU the encoder used (cores:
// its CPU time over the wall time it ran).
func BenchmarkRecordingOverhead(b *testing.B) {
	if skipWhy != "" {
		b.Skip(skipWhy)
	}
	for _, recording := range []bool{false, true} {
		name := "idle"
		if recording {
			name = "recording"
		}
		b.Run(name, func(b *testing.B) {
			var id string
			var before syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
			start := time.Now()
			if recording {
				a := call(b, "POST", "/api/v1/display/recordings", map[string]any{"framerate": 10})
				if a.status != 201 {
					b.Fatalf("start: %d %s", a.status, a.body)
				}
				var rec recordings.Recording
				a.decode(b, &rec)
				id = rec.ID
			}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if a := call(b, "GET", "/api/v1/display/screenshots", nil); a.status != 200 {
					b.Fatalf("screenshot: %d", a.status)
				}
				times = append(times, time.Since(t0))
			}
			b.StopTimer()
			if recording {
				mustOK(b, call(b, "POST", "/api/v1/display/recordings/"+id+"/stop", map[string]any{}), "stop")
				wall := time.Since(start)
				var after syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
				cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
				b.ReportMetric(cpu.Seconds()/wall.Seconds(), "ffmpeg-cores")
				call(b, "DELETE", "/api/v1/display/recordings/"+id, nil)
			}
			b.ReportMetric(quantile(times, 0.5), "p50-ms")
			b.ReportMetric(quantile(times, 0.9), "p90-ms")
		})
	}
}

// Recordings are bounded in total (--display-recordings-max-total): a new
// recording whose max_bytes does not fit beside the kept videos is refused
// with 409 naming the flag, and nothing starts; one that fits exactly
// starts, and deleting a recording makes room again.
func TestRecordingsTotalBound(t *testing.T) {
	needX(t)
	startXterm(t, "rec-total")
	var list []recordings.Recording
	call(t, "GET", "/api/v1/display/recordings", nil).decode(t, &list)
	var before int64
	for _, r := range list {
		before += r.Bytes
	}
	limit := before + 3<<19 // room for 1.5 MiB more
	service.LimitRecordings(limit)
	t.Cleanup(func() { service.LimitRecordings(api.DefaultRecordingsMaxTotal) })
	start := func(maxBytes int64) answer {
		t.Helper()
		return call(t, "POST", "/api/v1/display/recordings", map[string]any{"max_bytes": maxBytes, "max_seconds": 600})
	}
	record := func(maxBytes int64) recordings.Recording {
		t.Helper()
		a := start(maxBytes)
		if a.status != 201 {
			t.Fatalf("start with max_bytes %d under %d: %d %s", maxBytes, limit, a.status, a.body)
		}
		var rec recordings.Recording
		a.decode(t, &rec)
		t.Cleanup(func() { call(t, "DELETE", "/api/v1/display/recordings/"+rec.ID, nil) })
		// The screen changes so the encoder has frames to write out.
		deadline := time.Now().Add(2 * time.Minute)
		for i := 0; ; i++ {
			var list []recordings.Recording
			call(t, "GET", "/api/v1/display/recordings", nil).decode(t, &list)
			if slices.ContainsFunc(list, func(r recordings.Recording) bool { return r.ID == rec.ID && r.Bytes > 4<<10 }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("recording %s wrote nothing: %+v", rec.ID, list)
			}
			call(t, "POST", "/api/v1/display/keyboard/type", map[string]any{"text": fmt.Sprintf("line %d of changing text\n", i)})
			time.Sleep(100 * time.Millisecond)
		}
		mustOK(t, call(t, "POST", "/api/v1/display/recordings/"+rec.ID+"/stop", map[string]any{}), "stop")
		return stopped(t, rec.ID)
	}
	first := record(1 << 20)
	if first.Bytes > 1<<19 {
		t.Skipf("the first recording took %d bytes: too many for this test's arithmetic", first.Bytes)
	}
	room := limit - before - first.Bytes

	kept := len(list) + 1
	a := start(room + 1)
	if a.status != 409 || !strings.Contains(string(a.body), "--display-recordings-max-total") {
		t.Fatalf("a recording past the total: %d %s", a.status, a.body)
	}
	call(t, "GET", "/api/v1/display/recordings", nil).decode(t, &list)
	if len(list) != kept {
		t.Fatalf("the refused recording was kept: %+v", list)
	}
	second := record(room) // fits exactly
	if a := call(t, "DELETE", "/api/v1/display/recordings/"+first.ID, nil); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	record(limit - before - second.Bytes) // the deleted one's room is free again
}
