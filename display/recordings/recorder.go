package recordings

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

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
