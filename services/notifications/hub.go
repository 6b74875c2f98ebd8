package notifications

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Kinds of notifications.
const (
	KindEvent   = "event"
	KindDesktop = "desktop"
)

// Stream message types.
const (
	TypeNotification = "notification"
	TypeDismissed    = "dismissed"
)

// Reasons a notification ended.
const (
	ReasonDismissed = "dismissed" // through the API or a stream client
	ReasonExpired   = "expired"   // its timeout passed
	ReasonClosed    = "closed"    // the program called CloseNotification
)

const bucketMessages = "messages"

// Action is a desktop notification's action.
type Action struct {
	Key   string `json:"key" required:"true"`
	Label string `json:"label" required:"true"`
}

// Notification is one notification in its latest state.
type Notification struct {
	ID            string         `json:"id" required:"true"`
	Kind          string         `json:"kind" required:"true" enum:"event,desktop"`
	Display       string         `json:"display" required:"true" doc:"\":N\" for desktop notifications, \"agent\" for events"`
	Source        string         `json:"source" required:"true" doc:"the event's source, or the program's app_name"`
	EventKind     string         `json:"event_kind,omitempty" doc:"service.crashed, program.crashed, schedule.failed, port.opened"`
	Level         string         `json:"level" required:"true" enum:"info,warn,error"`
	Urgency       string         `json:"urgency,omitempty" enum:"low,normal,critical"`
	Title         string         `json:"title" required:"true"`
	Body          string         `json:"body"`
	Icon          string         `json:"icon,omitempty"`
	Category      string         `json:"category,omitempty"`
	Actions       []Action       `json:"actions,omitempty"`
	Data          map[string]any `json:"data,omitempty"`
	DBusID        uint32         `json:"dbus_id,omitempty" doc:"the id Notify answered on the bus"`
	CreatedAt     time.Time      `json:"created_at" required:"true"`
	UpdatedAt     time.Time      `json:"updated_at" required:"true"`
	ExpiresAt     *time.Time     `json:"expires_at,omitempty"`
	Dismissed     bool           `json:"dismissed" required:"true"`
	DismissedAt   *time.Time     `json:"dismissed_at,omitempty"`
	DismissReason string         `json:"dismiss_reason,omitempty" enum:"dismissed,expired,closed"`
}

// Message is one stream message.
type Message struct {
	Type         string       `json:"type" required:"true" enum:"notification,dismissed"`
	Seq          uint64       `json:"seq" required:"true"`
	Time         time.Time    `json:"time" required:"true"`
	Notification Notification `json:"notification" required:"true"`
}

// subscriber is one stream client's queue.
type subscriber struct {
	ch      chan Message
	dropped chan struct{} // closed when the client fell too far behind
}

const subscriberQueue = 256

// hub keeps the current notifications and the stream's newest messages,
// in memory and in the store, and fans messages out to subscribers.
type hub struct {
	db    *store.DB
	clock clockpkg.Clock
	keep  int

	mu       sync.Mutex
	msgs     []Message // newest keep, ascending seq
	current  map[string]*Notification
	byDBus   map[uint32]string
	nextDBus uint32
	subs     map[*subscriber]bool
	timers   map[string]*time.Timer
	onExpire func(Notification)
	closed   bool
}

// messageTable is the messages by sequence number (key order is their
// order); a start reads the newest keep.
var messageTable = store.Declare(bucketMessages, []store.Field[Message]{})

func key(seq uint64) string { return fmt.Sprintf("%020d", seq) }

func newHub(db *store.DB, clock clockpkg.Clock, keep int) (*hub, error) {
	h := &hub{db: db, clock: clock, keep: keep, current: map[string]*Notification{}, byDBus: map[uint32]string{},
		subs: map[*subscriber]bool{}, timers: map[string]*time.Timer{}}
	err := db.Declare(context.Background(), messageTable)
	if err == nil {
		err = db.View(func(tx *store.Tx) error {
			pg, err := store.PageOf[Message](tx, messageTable, store.Query{Desc: true, Limit: keep, SkipTotal: true})
			h.msgs = pg.Items
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("notifications: load: %w", err)
	}
	sort.Slice(h.msgs, func(i, j int) bool { return h.msgs[i].Seq < h.msgs[j].Seq })
	for _, m := range h.msgs {
		n := m.Notification
		h.current[n.ID] = &n
		h.nextDBus = max(h.nextDBus, n.DBusID)
	}
	now := clock.Now()
	for id, n := range h.current {
		if n.Dismissed {
			continue
		}
		if n.DBusID != 0 {
			// A program's id means nothing after a restart: those it has
			// not closed stay listed until dismissed or expired.
			h.byDBus[n.DBusID] = id
		}
		if n.ExpiresAt != nil {
			h.armLocked(*n, n.ExpiresAt.Sub(now))
		}
	}
	return h, nil
}

// publishLocked stores and sends a message; h.mu is held.
func (h *hub) publishLocked(typ string, n Notification) (Message, error) {
	m := Message{Type: typ, Time: h.clock.Now().UTC(), Notification: n}
	err := h.db.Update(func(tx *store.Tx) error {
		seq, err := tx.NextSeq(bucketMessages)
		if err != nil {
			return err
		}
		m.Seq = seq
		m.Notification.ID = cmp.Or(m.Notification.ID, "n"+strconv.FormatUint(seq, 10))
		if err := tx.Put(bucketMessages, key(seq), m); err != nil {
			return err
		}
		if seq > uint64(h.keep) {
			return tx.Delete(bucketMessages, key(seq-uint64(h.keep)))
		}
		return nil
	})
	if err != nil {
		return Message{}, err
	}
	h.msgs = append(h.msgs, m)
	if len(h.msgs) > h.keep {
		h.msgs = append(h.msgs[:0:0], h.msgs[len(h.msgs)-h.keep:]...)
	}
	n = m.Notification
	h.current[n.ID] = &n
	// Past twice the window, notifications older than the window are
	// forgotten (open ones too: they aged out), so memory stays bounded.
	if len(h.current) > 2*h.keep {
		oldest := h.msgs[0].Seq
		for id := range h.current {
			if seqOf(id) < oldest {
				delete(h.current, id)
			}
		}
	}
	for s := range h.subs {
		select {
		case s.ch <- m:
		default:
			delete(h.subs, s)
			close(s.dropped)
		}
	}
	return m, nil
}

func seqOf(id string) uint64 {
	n, _ := strconv.ParseUint(id[1:], 10, 64)
	return n
}

// add publishes a new notification, or replaces the open desktop
// notification with D-Bus id replaces. It answers the stored notification.
func (h *hub) add(n Notification, replaces uint32) (Notification, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return Notification{}, fault.Errorf(fault.CodeUnavailable, "notifications: stopping")
	}
	now := h.clock.Now().UTC()
	n.UpdatedAt = now
	if n.CreatedAt.IsZero() {
		n.CreatedAt = now
	}
	if replaces != 0 {
		if id, ok := h.byDBus[replaces]; ok {
			if old := h.current[id]; old != nil && !old.Dismissed {
				n.ID, n.DBusID, n.CreatedAt = old.ID, old.DBusID, old.CreatedAt
				h.stopTimerLocked(id)
			}
		}
	}
	if n.Kind == KindDesktop && n.DBusID == 0 {
		h.nextDBus++
		if h.nextDBus == 0 {
			h.nextDBus = 1
		}
		n.DBusID = h.nextDBus
	}
	m, err := h.publishLocked(TypeNotification, n)
	if err != nil {
		return Notification{}, err
	}
	n = m.Notification
	if n.DBusID != 0 {
		h.byDBus[n.DBusID] = n.ID
	}
	if n.ExpiresAt != nil {
		h.armLocked(n, n.ExpiresAt.Sub(now))
	}
	return n, nil
}

func (h *hub) armLocked(n Notification, d time.Duration) {
	d = max(d, 0)
	id := n.ID
	h.timers[id] = time.AfterFunc(d, func() {
		if got, ok := h.dismiss(id, ReasonExpired); ok && h.onExpire != nil {
			h.onExpire(got)
		}
	})
}

func (h *hub) stopTimerLocked(id string) {
	if t := h.timers[id]; t != nil {
		t.Stop()
		delete(h.timers, id)
	}
}

// dismiss ends an open notification; ok is false when it was not open.
func (h *hub) dismiss(id, reason string) (Notification, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dismissLocked(id, reason)
}

func (h *hub) dismissLocked(id, reason string) (Notification, bool) {
	n := h.current[id]
	if h.closed || n == nil || n.Dismissed {
		return Notification{}, false
	}
	h.stopTimerLocked(id)
	d := *n
	now := h.clock.Now().UTC()
	d.Dismissed, d.DismissedAt, d.DismissReason, d.UpdatedAt = true, &now, reason, now
	if _, err := h.publishLocked(TypeDismissed, d); err != nil {
		return Notification{}, false
	}
	if d.DBusID != 0 {
		delete(h.byDBus, d.DBusID)
	}
	return d, true
}

// newest is the newest message's seq (0 before any).
func (h *hub) newest() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.msgs) == 0 {
		return 0
	}
	return h.msgs[len(h.msgs)-1].Seq
}

// byDBusID finds the open notification a program's id names.
func (h *hub) byDBusID(id uint32) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	nid, ok := h.byDBus[id]
	return nid, ok
}

// get answers a notification by id.
func (h *hub) get(id string) (Notification, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.current[id]
	if n == nil {
		return Notification{}, false
	}
	return *n, true
}

// open lists the open notifications, of a display when given, oldest first.
func (h *hub) open(display string) []Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []Notification{}
	for _, n := range h.current {
		if !n.Dismissed && (display == "" || n.Display == display) {
			out = append(out, *n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return seqOf(out[i].ID) < seqOf(out[j].ID) })
	return out
}

// subscribe answers the kept messages after since and a subscriber for
// the live ones, atomically: nothing falls between the two.
func (h *hub) subscribe(since uint64) (backlog []Message, newest, oldest uint64, sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sub = &subscriber{ch: make(chan Message, subscriberQueue), dropped: make(chan struct{})}
	if h.closed {
		close(sub.dropped)
		return nil, 0, 0, sub
	}
	if len(h.msgs) > 0 {
		oldest, newest = h.msgs[0].Seq, h.msgs[len(h.msgs)-1].Seq
	}
	for _, m := range h.msgs {
		if m.Seq > since {
			backlog = append(backlog, m)
		}
	}
	h.subs[sub] = true
	return backlog, newest, oldest, sub
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[s] {
		delete(h.subs, s)
		close(s.dropped)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for id := range h.timers {
		h.stopTimerLocked(id)
	}
	for s := range h.subs {
		delete(h.subs, s)
		close(s.dropped)
	}
}
