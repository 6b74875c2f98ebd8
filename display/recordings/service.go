// Package recordings records the screen (an ffmpeg x11grab child, at most
// one at a time) with a timeline of every display action taken while it
// runs: it is the desk's timeline.
package recordings

import (
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"

	"deckhand/display/core"
	"deckhand/platform/fault"
)

// DefaultMaxTotal is the bytes all kept recordings may take unless
// LimitRecordings says otherwise: room for the largest single recording
// (max_bytes 4 GiB).
const DefaultMaxTotal = 4 << 30

// Service keeps the recordings of a desk.
type Service struct {
	desk    *core.Desk
	dataDir string // the service's own directory ("" for none)
	recOnce sync.Once
	rec     atomic.Pointer[recorder]
	recMax  atomic.Int64 // bytes all kept recordings may take (LimitRecordings)
}

// New keeps recordings of desk in dataDir/recordings (a temporary
// directory when dataDir is ""); it becomes the desk's timeline.
func New(desk *core.Desk, dataDir string) *Service {
	s := &Service{desk: desk, dataDir: dataDir}
	s.recMax.Store(DefaultMaxTotal)
	desk.SetTimeline(s.timeline)
	return s
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
