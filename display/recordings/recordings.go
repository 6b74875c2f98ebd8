package recordings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"deckhand/display/core"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// recordings is the recorder: its files in <data>/display/recordings, or a temporary directory when
// the service has no data directory.
func (s *Service) recordings() (*recorder, error) {
	return s.recorderOf(true)
}

// recorderOf is the recorder; without create, nil until a recording was
// started or the service has a data directory (nothing to list then).
func (s *Service) recorderOf(create bool) (*recorder, error) {
	if !create && s.dataDir == "" {
		return s.rec.Load(), nil
	}
	s.recOnce.Do(func() {
		r := &recorder{recs: map[string]*recording{}, spawner: proc.NewSpawner()}
		if s.dataDir != "" {
			r.dir = filepath.Join(s.dataDir, "recordings")
		} else if d, err := os.MkdirTemp("", "deckhand-recordings-"); err == nil {
			r.dir, r.tempDir = d, true
		}
		if r.dir != "" && os.MkdirAll(r.dir, 0o700) == nil {
			r.load()
		}
		if r.dir != "" {
			s.rec.Store(r)
		}
	})
	r := s.rec.Load()
	if r == nil {
		return nil, fault.Internal("prepare the recordings directory", errors.New("no directory"))
	}
	return r, nil
}

// StartRecording starts recording the screen.
func (s *Service) StartRecording(_ context.Context, in StartRecording) (Recording, error) {
	d, err := s.desk.Current()
	if err != nil {
		return Recording{}, err
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return Recording{}, fault.Errorf(fault.CodeUnavailable, "ffmpeg is not installed").
			WithDetails("recordings need Debian's ffmpeg (scripts/setup.sh)")
	}
	screen, err := core.Bounds(d)
	if err != nil {
		return Recording{}, err
	}
	r, err := s.recordings()
	if err != nil {
		return Recording{}, err
	}
	rec := &recording{Recording: Recording{ID: uuid.NewString(), Status: RecordingActive, Format: cmp.Or(in.Format, "mp4"),
		Framerate: cmp.Or(in.Framerate, 10), MaxSeconds: cmp.Or(in.MaxSeconds, 600), MaxBytes: cmp.Or(in.MaxBytes, 500<<20),
		Width: screen.Width &^ 1, Height: screen.Height &^ 1}, done: make(chan struct{}), events: []TimelineEvent{},
		stderr: &tail{}}
	rec.path = filepath.Join(r.dir, rec.ID+"."+rec.Format)
	codec := []string{"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-movflags", "+faststart"}
	if rec.Format == "webm" {
		codec = []string{"-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-row-mt", "1", "-b:v", "1M", "-pix_fmt", "yuv420p"}
	}
	args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-draw_mouse", "1",
		"-framerate", strconv.Itoa(rec.Framerate), "-video_size", fmt.Sprintf("%dx%d", rec.Width, rec.Height),
		"-i", d.Display() + "+0,0", "-t", strconv.Itoa(rec.MaxSeconds), "-fs", strconv.FormatInt(rec.MaxBytes, 10)}
	args = append(append(args, codec...), "-y", rec.path)
	cmd := exec.Command("ffmpeg", args...)
	attr, _, err := proc.Attr("")
	if err != nil {
		return Recording{}, fault.Internal("prepare ffmpeg", err)
	}
	cmd.SysProcAttr, cmd.Env = attr, proc.Env()
	cmd.Stderr = rec.stderr

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active != nil {
		return Recording{}, fault.Errorf(fault.CodeConflict, "recording %s is still running; stop it first", r.active.ID).
			WithDetails("one recording at a time")
	}
	if kept, limit := r.kept(), s.recMax.Load(); kept+rec.MaxBytes > limit {
		return Recording{}, fault.Errorf(fault.CodeConflict, "the kept recordings take %d bytes; with this one's max_bytes %d the "+
			"total would pass --display-recordings-max-total (%d bytes): delete recordings or ask a smaller max_bytes",
			kept, rec.MaxBytes, limit).WithDetails("--display-recordings-max-total")
	}
	rec.StartedAt = s.desk.Clock.Now().UTC()
	if err := r.spawner.Start(cmd); err != nil {
		return Recording{}, fault.Internal("start ffmpeg", err)
	}
	rec.cmd = cmd
	r.recs[rec.ID], r.active = rec, rec
	go r.supervise(s, rec)
	return rec.Recording, nil
}

// LimitRecordings sets the bytes all kept recordings may take together
// (--display-recordings-max-total); a new recording whose max_bytes does
// not fit beside them is refused.
func (s *Service) LimitRecordings(total int64) { s.recMax.Store(total) }

// supervise waits for ffmpeg and records how the recording ended.
func (r *recorder) supervise(s *Service, rec *recording) {
	err := rec.cmd.Wait()
	st, _ := os.Stat(rec.path)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := s.desk.Clock.Now().UTC()
	rec.StoppedAt = &now
	if st != nil {
		rec.Bytes = st.Size()
	}
	rec.Status = RecordingStopped
	switch {
	case st == nil || (err != nil && rec.why == ""):
		rec.Status = RecordingFailed
		rec.Error = strings.TrimSpace(rec.stderr.String())
		if rec.Error == "" && err != nil {
			rec.Error = err.Error()
		}
		if rec.Error == "" {
			rec.Error = "ffmpeg wrote no video"
		}
	case rec.why != "":
		rec.StopReason = rec.why
	case rec.Bytes >= rec.MaxBytes*9/10:
		rec.StopReason = StoppedBySizeLimit
	default:
		rec.StopReason = StoppedByTimeLimit
	}
	if r.active == rec {
		r.active = nil
	}
	r.save(rec)
	close(rec.done)
	if rec.Status == RecordingFailed {
		s.desk.Log.Error("display recording failed", "id", rec.ID, "err", rec.Error)
	}
}

// StopRecording stops a recording and answers it, its video complete.
func (s *Service) StopRecording(_ context.Context, in RecordingRef) (Recording, error) {
	r, rec, err := s.recording(in.ID)
	if err != nil {
		return Recording{}, err
	}
	r.stop(rec, StoppedByRequest)
	return r.view(rec), nil
}

func (s *Service) recording(id string) (*recorder, *recording, error) {
	r, err := s.recorderOf(false)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		return nil, nil, fault.NotFound("recording", id)
	}
	rec, err := r.get(id)
	return r, rec, err
}

// Recordings lists the recordings, newest first.
func (s *Service) Recordings(context.Context) ([]Recording, error) {
	r, err := s.recorderOf(false)
	if err != nil || r == nil {
		return []Recording{}, err
	}
	r.mu.Lock()
	recs := slices.Collect(maps.Values(r.recs))
	r.mu.Unlock()
	out := make([]Recording, 0, len(recs))
	for _, rec := range recs {
		out = append(out, r.view(rec))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out, nil
}

// RecordingVideo answers a stopped recording's video.
func (s *Service) RecordingVideo(_ context.Context, in RecordingRef) (Video, error) {
	r, rec, err := s.recording(in.ID)
	if err != nil {
		return Video{}, err
	}
	v := r.view(rec)
	if v.Status == RecordingActive {
		return Video{}, fault.Errorf(fault.CodeConflict, "recording %s is still running; stop it first", in.ID).WithDetails("status")
	}
	b, err := os.ReadFile(rec.path)
	if err != nil {
		return Video{}, fault.NotFound("recording video", in.ID)
	}
	return Video{Body: b, ContentType: "video/" + v.Format,
		ContentDisposition: fmt.Sprintf("attachment; filename=%q", "recording-"+v.ID+"."+v.Format)}, nil
}

// RecordingTimeline answers the actions taken while recording.
func (s *Service) RecordingTimeline(_ context.Context, in RecordingRef) (Timeline, error) {
	r, rec, err := s.recording(in.ID)
	if err != nil {
		return Timeline{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return Timeline{RecordingID: rec.ID, Events: append([]TimelineEvent{}, rec.events...)}, nil
}

// RecordingVTT answers the timeline as WebVTT cues: each action shows
// from its moment until the next (at most 3 s, at least 0.5 s).
func (s *Service) RecordingVTT(ctx context.Context, in RecordingRef) (VTT, error) {
	tl, err := s.RecordingTimeline(ctx, in)
	if err != nil {
		return VTT{}, err
	}
	return VTT{Body: []byte(WebVTT(tl.Events)), ContentType: "text/vtt; charset=utf-8"}, nil
}

// WebVTT writes events as WebVTT cues.
func WebVTT(events []TimelineEvent) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	for i, e := range events {
		end := e.OffsetMS + 3000
		if i+1 < len(events) && events[i+1].OffsetMS < end {
			end = max(events[i+1].OffsetMS, e.OffsetMS+500)
		}
		text := e.Action
		if e.Element != nil {
			text += " " + strconv.Quote(e.Element.Name) + " (" + e.Element.Role + ")"
		}
		if len(e.Args) > 0 && string(e.Args) != "{}" && string(e.Args) != "null" {
			text += " " + string(e.Args)
		}
		if !e.OK {
			text += " failed: " + e.Error
		}
		// a cue's text must not hold an empty line or "-->"
		text = strings.ReplaceAll(strings.ReplaceAll(text, "\n", " "), "-->", "->")
		fmt.Fprintf(&b, "\n%d\n%s --> %s\n%s\n", i+1, vttTime(e.OffsetMS), vttTime(end), text)
	}
	return b.String()
}

func vttTime(ms int64) string {
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}

// DeleteRecording stops a recording if it runs and deletes its files.
func (s *Service) DeleteRecording(_ context.Context, in RecordingRef) error {
	r, rec, err := s.recording(in.ID)
	if err != nil {
		return err
	}
	r.stop(rec, StoppedByRequest)
	r.mu.Lock()
	delete(r.recs, rec.ID)
	r.mu.Unlock()
	_ = os.Remove(rec.path)
	_ = os.Remove(filepath.Join(r.dir, rec.ID+".json"))
	return nil
}
