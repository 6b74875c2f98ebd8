package recordings

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"deckhand/display/core"
	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

// Recording states and why a recording stopped.
const (
	RecordingActive  = "recording"
	RecordingStopped = "stopped"
	RecordingFailed  = "failed"

	StoppedByRequest   = "request"
	StoppedByTimeLimit = "time_limit"
	StoppedBySizeLimit = "size_limit"
	StoppedByShutdown  = "shutdown"
)

// Recording is one screen recording.
type Recording struct {
	ID         string     `json:"id" required:"true"`
	Status     string     `json:"status" required:"true" enum:"recording,stopped,failed"`
	Format     string     `json:"format" required:"true" enum:"mp4,webm" doc:"mp4 (H.264) or webm (VP9)"`
	Framerate  int        `json:"framerate" required:"true"`
	Width      int        `json:"width" required:"true"`
	Height     int        `json:"height" required:"true"`
	MaxSeconds int        `json:"max_seconds" required:"true"`
	MaxBytes   int64      `json:"max_bytes" required:"true"`
	StartedAt  time.Time  `json:"started_at" required:"true"`
	StoppedAt  *time.Time `json:"stopped_at" doc:"null while recording"`
	StopReason string     `json:"stop_reason,omitempty" enum:"request,time_limit,size_limit,shutdown" doc:"why it stopped"`
	Error      string     `json:"error,omitempty" doc:"failed: what ffmpeg said"`
	Bytes      int64      `json:"bytes" required:"true" doc:"the video's size so far"`
	Events     int        `json:"events" required:"true" doc:"actions in the timeline"`
}

// TimelineEvent is one display action taken while recording.
type TimelineEvent struct {
	OffsetMS int64                `json:"offset_ms" required:"true" doc:"since the recording started"`
	Time     time.Time            `json:"time" required:"true"`
	Action   string               `json:"action" required:"true" doc:"the action's name (click, type, click-element ...)"`
	Args     json.RawMessage      `json:"args,omitempty" doc:"the action's fields as sent"`
	Element  *core.TimelineTarget `json:"element,omitempty" doc:"the accessibility element acted on"`
	OK       bool                 `json:"ok" required:"true"`
	Error    string               `json:"error,omitempty"`
}

// Timeline answers GET .../recordings/{id}/timeline.
type Timeline struct {
	RecordingID string          `json:"recording_id" required:"true"`
	Events      []TimelineEvent `json:"events" required:"true"`
}

// StartRecording is POST .../recordings.
type StartRecording struct {
	Format     string `json:"format,omitempty" enum:"mp4,webm" doc:"mp4 (H.264, default: the least CPU) or webm (VP9)"`
	Framerate  int    `json:"framerate,omitempty" minimum:"1" maximum:"30" doc:"frames per second, default 10"`
	MaxSeconds int    `json:"max_seconds,omitempty" minimum:"1" maximum:"3600" doc:"the recording stops by itself after this, default 600"`
	MaxBytes   int64  `json:"max_bytes,omitempty" minimum:"1048576" maximum:"4294967296" doc:"the recording stops by itself at this size, default 500 MiB; ffmpeg then writes the frames in flight and the index, so the file can end up to a few hundred KiB larger"`
}

// RecordingRef names a recording in the path.
type RecordingRef struct {
	ID string `path:"id" format:"uuid" doc:"the recording's id"`
}

// ValidateParams checks the id's syntax.
func (r RecordingRef) ValidateParams() error {
	if _, err := uuid.Parse(r.ID); err != nil {
		return fault.Invalid("id", "must be a recording id (a UUID), got %q", r.ID)
	}
	return nil
}

// Video is a recording's video.
type Video struct {
	Body               []byte
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
}

// VTT is a timeline as WebVTT.
type VTT struct {
	Body        []byte
	ContentType string `header:"Content-Type"`
}

// recorder keeps the recordings of one service: at most one records at a
// time (an encoder takes a CPU core), each an ffmpeg child.
type recorder struct {
	mu      sync.Mutex
	dir     string // where videos and timelines live
	tempDir bool   // dir is the service's own temporary one
	recs    map[string]*recording
	active  *recording
	spawner *proc.Spawner
}

type recording struct {
	Recording
	path   string
	events []TimelineEvent
	cmd    *exec.Cmd
	done   chan struct{} // closed when ffmpeg has exited and the state is final
	stderr *tail
	why    string // the stop reason asked for
}

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

// load reads the recordings a previous run left.
func (r *recorder) load() {
	metas, _ := filepath.Glob(filepath.Join(r.dir, "*.json"))
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var saved struct {
			Recording
			Events []TimelineEvent `json:"timeline"`
		}
		if json.Unmarshal(b, &saved) != nil || saved.ID == "" {
			continue
		}
		rec := &recording{Recording: saved.Recording, events: saved.Events, done: make(chan struct{})}
		rec.path = filepath.Join(r.dir, rec.ID+"."+rec.Format)
		if rec.Status == RecordingActive { // the service stopped while it recorded
			rec.Status, rec.StopReason = RecordingStopped, StoppedByShutdown
		}
		close(rec.done)
		r.recs[rec.ID] = rec
	}
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

// kept is the bytes the recordings' videos take; r.mu is held. A running
// one counts with its max_bytes, the most it may still take.
func (r *recorder) kept() int64 {
	var n int64
	for _, rec := range r.recs {
		if rec.Status == RecordingActive {
			n += rec.MaxBytes
		} else {
			n += rec.Bytes
		}
	}
	return n
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

// save writes the recording's state and timeline beside its video.
func (r *recorder) save(rec *recording) {
	b, err := json.Marshal(struct {
		Recording
		Events []TimelineEvent `json:"timeline"`
	}{rec.Recording, rec.events})
	if err != nil {
		return
	}
	path := filepath.Join(r.dir, rec.ID+".json")
	if os.WriteFile(path+".tmp", b, 0o600) == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

// tail keeps the last 4 KiB written to it (ffmpeg's errors).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// stop asks ffmpeg to finish the file (SIGINT) and waits for it; after
// 10 s it is killed.
func (r *recorder) stop(rec *recording, why string) {
	r.mu.Lock()
	running := rec.Status == RecordingActive && rec.cmd != nil
	if running && rec.why == "" {
		rec.why = why
	}
	r.mu.Unlock()
	if !running {
		return
	}
	// ffmpeg finishes the file on SIGINT once it has opened it; before,
	// the signal would only kill it (no video at all)
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(rec.path); err == nil {
			break
		}
		select {
		case <-rec.done:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	proc.StopTree(rec.cmd.Process.Pid, syscall.SIGINT, 10*time.Second, rec.done)
}

func (r *recorder) get(id string) (*recording, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.recs[id]
	if !ok {
		return nil, fault.NotFound("recording", id)
	}
	return rec, nil
}

// view is the recording as clients see it now.
func (r *recorder) view(rec *recording) Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := rec.Recording
	v.Events = len(rec.events)
	if v.Status == RecordingActive {
		if st, err := os.Stat(rec.path); err == nil {
			v.Bytes = st.Size()
		}
	}
	return v
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
	recs := make([]*recording, 0, len(r.recs))
	for _, rec := range r.recs {
		recs = append(recs, rec)
	}
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

// timeline adds an event to the running recording's timeline, if any.
func (s *Service) timeline(action string, args any, el *core.TimelineTarget, err error) {
	r := s.rec.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.active
	if rec == nil {
		return
	}
	now := s.desk.Clock.Now().UTC()
	e := TimelineEvent{OffsetMS: now.Sub(rec.StartedAt).Milliseconds(), Time: now, Action: action, Element: el, OK: err == nil}
	if args != nil {
		if b, mErr := json.Marshal(args); mErr == nil {
			e.Args = b
		}
	}
	if err != nil {
		e.Error = fault.AsError(err).Message
	}
	rec.events = append(rec.events, e)
}

// Close stops what records and ends the spawner.
func (s *Service) Close() {
	r := s.rec.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	active := r.active
	r.mu.Unlock()
	if active != nil {
		r.stop(active, StoppedByShutdown)
	}
	r.spawner.Close()
	if r.tempDir {
		_ = os.RemoveAll(r.dir)
	}
}
