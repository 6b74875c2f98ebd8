package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// Event is one change seen under the root.
type Event struct {
	Seq  uint64    `json:"seq" required:"true" doc:"increases by one per event of the service; resume with since=<last seq> or Last-Event-ID"`
	Type string    `json:"type" required:"true" enum:"create,write,remove,rename,chmod"`
	Path string    `json:"path" required:"true"`
	Dir  bool      `json:"dir,omitempty" doc:"the path is a directory (known for create)"`
	Time time.Time `json:"time" required:"true"`
}

// maxWatches bounds the directories one service watches.
const maxWatches = 100000

// watcher turns inotify events (through fsnotify) into numbered Events
// kept in a bounded ring, and fans them out to subscribers. Directories
// stay watched once a client asked for them, so events that happen while a
// client reconnects are still recorded.
type watcher struct {
	s       *Service
	mu      sync.Mutex
	fw      *fsnotify.Watcher
	watched map[string]bool // root-relative dirs
	ring    []Event
	size    int
	seq     uint64
	subs    map[chan Event]struct{}
	done    chan struct{}
	closed  bool
}

func newWatcher(s *Service, size int) *watcher {
	return &watcher{s: s, size: size, watched: map[string]bool{}, subs: map[chan Event]struct{}{}, done: make(chan struct{})}
}

func (w *watcher) osPath(r string) string { return path.Join(w.s.root.Name(), r) }

func (w *watcher) relOf(p string) (string, bool) {
	base := strings.TrimSuffix(w.s.root.Name(), "/")
	if p == base {
		return ".", true
	}
	return strings.CutPrefix(p, base+"/")
}

// start creates the inotify instance on first use.
func (w *watcher) start() error {
	if w.fw != nil {
		return nil
	}
	if w.closed {
		return fault.Errorf(fault.CodeUnavailable, "the file service is stopping")
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fault.Internal("start watching", err)
	}
	w.fw = fw
	go w.loop(fw)
	return nil
}

// add watches r and, with recursive, every directory below it (symbolic
// links are not followed: they are found through the root and never
// descended). It reports whether r is a directory.
func (w *watcher) add(r string, recursive bool) error {
	fi, err := w.s.root.Lstat(r)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return nil // a file is watched through its parent
	}
	if !w.watched[r] {
		if len(w.watched) >= maxWatches {
			return fault.Errorf(fault.CodeConflict, "more than %d directories to watch; watch a narrower path", maxWatches).WithDetails("path")
		}
		if err := w.fw.Add(w.osPath(r)); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return fault.Errorf(fault.CodeConflict, "the kernel's inotify watch limit is reached (fs.inotify.max_user_watches); watch a narrower path").WithDetails("path")
			}
			return err
		}
		w.watched[r] = true
	}
	if !recursive {
		return nil
	}
	d, err := w.s.root.Open(r)
	if err != nil {
		return err
	}
	if isPseudoFS(d) {
		d.Close()
		return nil // /proc, /sys and the like: not descended (watching "/" stays sane)
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type()&fs.ModeType == fs.ModeDir {
			if err := w.add(path.Join(r, e.Name()), true); err != nil && !isSkippable(err) {
				return err
			}
		}
	}
	return nil
}

func (w *watcher) loop(fw *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case _, ok := <-fw.Errors:
			if !ok {
				return
			}
		}
	}
}

func (w *watcher) handle(ev fsnotify.Event) {
	r, ok := w.relOf(ev.Name)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.s.deps.Clock.Now().UTC()
	emit := func(t, r string, dir bool) {
		w.seq++
		e := Event{Seq: w.seq, Type: t, Path: apiPath(r), Dir: dir, Time: now}
		if len(w.ring) == w.size {
			copy(w.ring, w.ring[1:])
			w.ring = w.ring[:w.size-1]
		}
		w.ring = append(w.ring, e)
		for ch := range w.subs {
			select {
			case ch <- e:
			default:
				// A client that stops reading is cut off rather than
				// silently skipped: it reconnects with Last-Event-ID and
				// gets what it missed from the ring.
				delete(w.subs, ch)
				close(ch)
			}
		}
	}
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := w.s.root.Lstat(r)
		isDir := err == nil && fi.IsDir()
		emit("create", r, isDir)
		if isDir && w.watched[path.Dir(r)] {
			// A new directory is watched at once; whatever was created in
			// it before the watch took hold is reported as created.
			_ = w.add(r, false)
			w.s.each(r, true, func(p string, fi fs.FileInfo) error {
				if p != r {
					emit("create", p, fi.IsDir())
					if fi.IsDir() {
						_ = w.add(p, false)
					}
				}
				return nil
			})
		}
	case ev.Has(fsnotify.Write):
		emit("write", r, false)
	case ev.Has(fsnotify.Remove):
		w.forget(r)
		emit("remove", r, false)
	case ev.Has(fsnotify.Rename):
		w.forget(r)
		emit("rename", r, false)
	case ev.Has(fsnotify.Chmod):
		emit("chmod", r, false)
	}
}

// forget drops watches under a removed or renamed directory (the kernel
// already dropped them; the new name arrives as a create and is re-added).
func (w *watcher) forget(r string) {
	for d := range w.watched {
		if d == r || strings.HasPrefix(d, r+"/") {
			delete(w.watched, d)
			_ = w.fw.Remove(w.osPath(d))
		}
	}
}

// subscribe watches r and returns the ring's events after since that
// match, a channel of live ones, and whether events after since were lost
// (since older than the ring).
func (w *watcher) subscribe(r string, recursive bool, since uint64, resume bool) ([]Event, chan Event, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.start(); err != nil {
		return nil, nil, false, err
	}
	if err := w.add(r, recursive); err != nil {
		return nil, nil, false, err
	}
	ch := make(chan Event, 1024)
	w.subs[ch] = struct{}{}
	var past []Event
	lost := false
	if resume {
		oldest := w.seq + 1
		if len(w.ring) > 0 {
			oldest = w.ring[0].Seq
		}
		lost = since+1 < oldest && since < w.seq
		for _, e := range w.ring {
			if e.Seq > since {
				past = append(past, e)
			}
		}
	}
	return past, ch, lost, nil
}

func (w *watcher) unsubscribe(ch chan Event) {
	w.mu.Lock()
	if _, ok := w.subs[ch]; ok {
		delete(w.subs, ch)
		close(ch)
	}
	w.mu.Unlock()
}

func (w *watcher) lastSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	close(w.done)
	if w.fw != nil {
		_ = w.fw.Close()
	}
}

func matches(e Event, p string, recursive bool) bool {
	if p == "/" {
		return recursive || path.Dir(e.Path) == "/"
	}
	if e.Path == p {
		return true
	}
	if recursive {
		return strings.HasPrefix(e.Path, p+"/")
	}
	return path.Dir(e.Path) == p
}

// WatchInput is what to watch and where to resume.
type WatchInput struct {
	PathQuery
	Recursive   bool    `query:"recursive" default:"true" doc:"include everything below path"`
	Since       *uint64 `query:"since" maximum:"9223372036854775807" doc:"replay events after this seq first"`
	LastEventID string  `header:"Last-Event-ID" doc:"the last seq received: resume after it (EventSource sends it on reconnect)"`
}

// EventStream is a watch's Server-Sent Events.
type EventStream struct {
	CacheControl   string `header:"Cache-Control"`
	AccelBuffering string `header:"X-Accel-Buffering" doc:"no: a proxy in front must not buffer the stream"`
	Body           platform.BodyWriter
}

// Watch streams events as Server-Sent Events: "id:" is the sequence
// number, so EventSource resumes with Last-Event-ID on its own.
func (s *Service) Watch(_ context.Context, in WatchInput) (EventStream, error) {
	p := in.Path
	r, err := rel("path", p)
	if err != nil {
		return EventStream{}, err
	}
	recursive := in.Recursive
	var since uint64
	resume := in.Since != nil
	if resume {
		since = *in.Since
	}
	if id := in.LastEventID; id != "" {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return EventStream{}, fault.Invalid("Last-Event-ID", "must be a sequence number")
		}
		since, resume = n, true
	}
	var past []Event
	var ch chan Event
	var lost bool
	err = s.id.run(func() error {
		var err error
		past, ch, lost, err = s.watch.subscribe(r, recursive, since, resume)
		return err
	})
	if err != nil {
		return EventStream{}, fsError(p, err)
	}
	ap := apiPath(r)
	done := s.watch.done
	head := s.watch.lastSeq()
	return EventStream{CacheControl: "no-cache", AccelBuffering: "no", Body: func(bw platform.StreamWriter) {
		defer s.watch.unsubscribe(ch)
		last := since
		send := func(e Event) bool {
			if e.Seq <= last || !matches(e, ap, recursive) {
				return true
			}
			last = e.Seq
			raw, _ := json.Marshal(e)
			fmt.Fprintf(bw, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, raw)
			return bw.Flush() == nil
		}
		fmt.Fprintf(bw, "event: ready\ndata: {\"seq\":%d}\n\n", head)
		if lost {
			// The ring no longer holds every event after since: say so
			// rather than resume with a silent gap.
			oldest := since + 1
			if len(past) > 0 {
				oldest = past[0].Seq
			}
			fmt.Fprintf(bw, "event: lost\ndata: {\"code\":\"EVENTS_LOST\",\"since\":%d,\"oldest\":%d,\"message\":\"events after %d are no longer kept; re-list the directory\"}\n\n", since, oldest, since)
		}
		if bw.Flush() != nil {
			return
		}
		if !resume {
			last = head
		}
		for _, e := range past {
			if !send(e) {
				return
			}
		}
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			select {
			case e, ok := <-ch:
				if !ok || !send(e) {
					return
				}
			case <-tick.C:
				if _, err := bw.WriteString(": keep-alive\n\n"); err != nil || bw.Flush() != nil {
					return
				}
			case <-done:
				return
			}
		}
	}}, nil
}
