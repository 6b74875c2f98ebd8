package store

import (
	"context"
	"sync"
	"time"
)

// listenWait bounds how long the first Subscribe waits for the listener.
const listenWait = 5 * time.Second

// subBuffer is how many messages a subscriber may fall behind before it is
// told of a gap instead.
const subBuffer = 64

// hub fans the engine's messages out to this DB's subscribers. The engine's
// listener starts with the first subscription.
type hub struct {
	e      Engine
	mu     sync.Mutex
	subs   map[string]map[*subscriber]struct{}
	start  sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{}
	closed bool
}

type subscriber struct {
	ch chan Notification
}

func newHub(e Engine) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{e: e, subs: map[string]map[*subscriber]struct{}{}, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), ready: make(chan struct{})}
}

func (h *hub) subscribe(ctx context.Context, channel string) <-chan Notification {
	s := &subscriber{ch: make(chan Notification, subBuffer)}
	h.mu.Lock()
	if h.closed || ctx.Err() != nil {
		h.mu.Unlock()
		close(s.ch)
		return s.ch
	}
	if h.subs[channel] == nil {
		h.subs[channel] = map[*subscriber]struct{}{}
	}
	h.subs[channel][s] = struct{}{}
	h.mu.Unlock()
	h.start.Do(func() {
		go func() {
			defer close(h.done)
			h.e.Listen(h.ctx, h.deliver, sync.OnceFunc(func() { close(h.ready) }))
		}()
	})
	select { // a database that is down must not hold the caller long
	case <-h.ready:
	case <-ctx.Done():
	case <-h.ctx.Done():
	case <-time.After(listenWait):
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-h.ctx.Done():
		}
		h.drop(channel, s)
	}()
	return s.ch
}

func (h *hub) drop(channel string, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[channel][s]; ok {
		delete(h.subs[channel], s)
		close(s.ch)
	}
}

// deliver hands n to channel's subscribers (every subscriber when channel
// is empty: a gap after the engine's listener reconnected) without ever
// blocking: one that is full is emptied and told of a gap.
func (h *hub) deliver(channel string, n Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, set := range h.subs {
		if channel != "" && c != channel {
			continue
		}
		for s := range set {
			select {
			case s.ch <- n:
				continue
			default:
			}
			for drained := false; !drained; {
				select {
				case <-s.ch:
				default:
					drained = true
				}
			}
			s.ch <- Notification{Gap: true}
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for _, set := range h.subs {
		for s := range set {
			close(s.ch)
		}
	}
	h.subs = map[string]map[*subscriber]struct{}{}
	h.mu.Unlock()
	h.cancel()
	// Never started: done is closed here, so a second Close returns too.
	h.start.Do(func() { close(h.done) })
	<-h.done
}
