// Package notifications owns user-facing notifications (docs/spec/interface.md 4.11,
// docs/spec/operations.md admin API): global ones every user gets and ones targeted
// to one user, admin-created, with read state kept per user.
//
// Layout: the declared table "notifications" keyed by a time-ordered key
// (id = "ntf_" + key) with user_id an indexed field (NULL for global ones),
// so a user's list is one store page over two index ranges;
// "notification_reads" <user>\x1f<key> → read_at. Records never change and
// are never deleted: reading writes only the reader's own read entry, so a
// user's unread count is their visible total less their read entries.
package notifications

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"deckhand/control/domain"
	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const (
	bucket      = "notifications"
	bucketReads = "notification_reads"
	sep         = "\x1f"
)

// table is the notifications' bucket as a declared table.
var table = store.Declare(bucket, []store.Field[record]{
	store.OptionalText("user_id", func(r *record) string { return r.UserID }),
	store.Text("level", func(r *record) string { return r.Level }),
	store.Time("created_at", func(r *record) time.Time { return r.CreatedAt }),
}, store.Index{Fields: []string{"user_id"}})

// Tables are the tables this package declares.
var Tables = []*store.Table{table}

// legacyBuckets held the hand-built indexes of an earlier layout (by user,
// global); New drops them.
var legacyBuckets = []string{"notifications_by_user", "notifications_global"}

// Levels a notification may have.
var Levels = []string{"info", "success", "warning", "error", "maintenance"}

// Page sizes of the lists.
const (
	MaxLimit     = 100
	DefaultLimit = 20
)

// Notification is one notification. IsRead and ReadAt are the caller's
// read state, present only on authenticated reads: there read_at is null
// while unread (ReadAt points to a nil time), absent on public reads
// (ReadAt nil).
type Notification struct {
	ID        string      `json:"id"`
	Title     string      `json:"title"`
	Body      string      `json:"body"`
	Level     string      `json:"level"`
	UserID    *string     `json:"user_id"`
	CreatedAt time.Time   `json:"created_at"`
	IsRead    *bool       `json:"is_read,omitempty"`
	ReadAt    **time.Time `json:"read_at,omitempty" format:"date-time"`
}

type record struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Level     string    `json:"level"`
	UserID    string    `json:"user_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func (r *record) view() Notification {
	n := Notification{ID: r.ID, Title: r.Title, Body: r.Body, Level: r.Level, CreatedAt: r.CreatedAt}
	if r.UserID != "" {
		u := r.UserID
		n.UserID = &u
	}
	return n
}

// readView is the view with the reader's read state (readAt nil: unread).
func (r *record) readView(readAt *time.Time) Notification {
	n := r.view()
	read := readAt != nil
	n.IsRead, n.ReadAt = &read, &readAt
	return n
}

// Service is the notifications domain.
type Service struct{ env domain.Env[domain.NoConfig] }

// New builds the domain.
func New(env domain.Env[domain.NoConfig]) (*Service, error) {
	if err := env.Store.DeclareReplacing(context.Background(), Tables, legacyBuckets...); err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	return &Service{env: env}, nil
}

func newKey(t time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%019d-%s", t.UnixNano(), hex.EncodeToString(b[:]))
}

func keyOf(id string) string {
	k, ok := strings.CutPrefix(id, "ntf_")
	if !ok || len(k) != 32 || k[19] != '-' || strings.ContainsAny(k, sep+"/") {
		return ""
	}
	return k
}

// CreateInput is the body of POST /api/v1/admin/notifications.
type CreateInput struct {
	Title string `json:"title" required:"true"`
	Body  string `json:"body" required:"true"`
	// UserID targets one user; absent means global.
	UserID string `json:"user_id,omitempty"`
	Level  string `json:"level,omitempty"`
}

// Validate checks lengths and the level (default info).
func (in *CreateInput) Validate() error {
	in.Title, in.UserID = strings.TrimSpace(in.Title), strings.TrimSpace(in.UserID)
	if in.Title == "" || len(in.Title) > 200 {
		return fault.Invalid("title", "is required, at most 200 bytes")
	}
	if strings.TrimSpace(in.Body) == "" || len(in.Body) > 10000 {
		return fault.Invalid("body", "is required, at most 10000 bytes")
	}
	if why := events.CheckValue(in.UserID); why != "" {
		return fault.Invalid("user_id", "%s", why)
	}
	if in.Level == "" {
		in.Level = "info"
	}
	for _, l := range Levels {
		if in.Level == l {
			return nil
		}
	}
	return fault.Invalid("level", "must be one of %s, got %q", strings.Join(Levels, ", "), in.Level)
}

// Create stores a notification (admins only) and records the admin action
// as an activity.logged event about the notification.
func (s *Service) Create(ctx context.Context, in CreateInput) (*Notification, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var rec record
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		now := s.env.Clock.Now().UTC()
		key := newKey(now)
		rec = record{ID: "ntf_" + key, Title: in.Title, Body: in.Body, Level: in.Level, UserID: in.UserID, CreatedAt: now}
		if err := tx.Put(bucket, key, rec); err != nil {
			return err
		}
		_, err := s.env.Events.Append(tx, events.Event{EventType: events.ActivityLogged, ResourceType: events.ResNotification,
			ResourceID: rec.ID, UserID: in.UserID, ActorID: p.UserID, IP: auth.ClientIP(ctx),
			Payload: events.Payload(map[string]any{"action": "notification.created", "level": rec.Level, "global": in.UserID == ""})})
		return err
	})
	if err != nil {
		return nil, fault.Internal("create the notification", err)
	}
	v := rec.view()
	return &v, nil
}

// ListInput pages a list.
type ListInput struct {
	Limit  int `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"page size, 1 to 100"`
	Offset int `query:"offset" minimum:"0" maximum:"2147483648" default:"0"`
}

// NotificationRef names one notification.
type NotificationRef struct {
	ID string `path:"id" doc:"a notification id"`
}

// List is a page of notifications and how many there are.
type List struct {
	Notifications []Notification `json:"notifications"`
	Total         int            `json:"total"`
	Unread        *int           `json:"unread,omitempty"`
}

// visible is what a user gets: the global notifications and their own
// (only the global ones without a user).
func visible(userID string) []store.Filter {
	global := store.Where("user_id", store.Eq, nil)
	if userID == "" {
		return []store.Filter{global}
	}
	return []store.Filter{store.AnyOf(global, store.Where("user_id", store.Eq, userID))}
}

// keysFor is every notification key the user gets, newest first.
func keysFor(tx *store.Tx, userID string) ([]string, error) {
	_, keys, err := store.All[record](tx, table, store.Query{Filters: visible(userID), Desc: true})
	return keys, err
}

func (s *Service) list(ctx context.Context, userID string, in ListInput) (*List, error) {
	out := &List{Notifications: []Notification{}}
	err := s.env.Store.ViewContext(ctx, func(tx *store.Tx) error {
		pg, err := store.PageOf[record](tx, table, store.Query{Filters: visible(userID), Desc: true,
			Offset: max(in.Offset, 0), Limit: cmp.Or(max(in.Limit, 0), DefaultLimit)})
		if err != nil {
			return err
		}
		out.Total = pg.Total
		if userID == "" {
			for i := range pg.Items {
				out.Notifications = append(out.Notifications, pg.Items[i].view())
			}
			return nil
		}
		// The page's read state in one multi-get; the unread count from
		// the reader's read entries, which exist only for what they get.
		readKeys := make([]string, len(pg.Keys))
		for i, k := range pg.Keys {
			readKeys[i] = userID + sep + k
		}
		reads, err := store.GetMany[time.Time](tx, bucketReads, readKeys)
		if err != nil {
			return err
		}
		for i := range pg.Items {
			out.Notifications = append(out.Notifications, pg.Items[i].readView(reads[i]))
		}
		unread := pg.Total - tx.CountPrefix(bucketReads, userID+sep)
		out.Unread = &unread
		return nil
	})
	if err != nil {
		return nil, fault.Internal("list notifications", err)
	}
	return out, nil
}

// Mine lists the global notifications and the caller's own, with the
// caller's read state.
func (s *Service) Mine(ctx context.Context, in ListInput) (*List, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, p.UserID, in)
}

// Public lists the global notifications without read state.
func (s *Service) Public(ctx context.Context, in ListInput) (*List, error) {
	return s.list(ctx, "", in)
}

// MarkRead marks one notification the caller gets as read (idempotent:
// the first read time stays) and records notification.read the first time.
func (s *Service) MarkRead(ctx context.Context, ref NotificationRef) (*Notification, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	id := ref.ID
	key := keyOf(id)
	var v Notification
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		var rec record
		ok := false
		if key != "" {
			if ok, err = tx.Get(bucket, key, &rec); err != nil {
				return err
			}
		}
		if !ok || (rec.UserID != "" && rec.UserID != p.UserID) {
			return fault.NotFound("notification", id)
		}
		var readAt time.Time
		read, err := tx.Get(bucketReads, p.UserID+sep+key, &readAt)
		if err != nil {
			return err
		}
		if !read {
			readAt = s.env.Clock.Now().UTC()
			if err := tx.Put(bucketReads, p.UserID+sep+key, readAt); err != nil {
				return err
			}
			if _, err := s.env.Events.Append(tx, events.Event{EventType: events.NotificationRead, ResourceType: events.ResNotification,
				ResourceID: rec.ID, UserID: p.UserID, ActorID: p.UserID, IP: auth.ClientIP(ctx)}); err != nil {
				return err
			}
		}
		v = rec.readView(&readAt)
		return nil
	})
	if err != nil {
		return nil, fault.Wrap("mark the notification read", err)
	}
	return &v, nil
}

// ReadAll is the data of PUT /notifications/read-all.
type ReadAll struct {
	Marked int `json:"marked"`
}

// MarkAllRead marks every notification the caller gets as read and
// records one notification.read event per notification it marked.
func (s *Service) MarkAllRead(ctx context.Context) (*ReadAll, error) {
	p, err := platform.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out := &ReadAll{}
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		out.Marked = 0
		keys, err := keysFor(tx, p.UserID)
		if err != nil {
			return err
		}
		now := s.env.Clock.Now().UTC()
		readKeys := make([]string, len(keys))
		for i, k := range keys {
			readKeys[i] = p.UserID + sep + k
		}
		reads, err := tx.GetRawMany(bucketReads, readKeys)
		if err != nil {
			return err
		}
		for i, k := range keys {
			if reads[i] != nil {
				continue
			}
			if err := tx.Put(bucketReads, p.UserID+sep+k, now); err != nil {
				return err
			}
			if _, err := s.env.Events.Append(tx, events.Event{EventType: events.NotificationRead, ResourceType: events.ResNotification,
				ResourceID: "ntf_" + k, UserID: p.UserID, ActorID: p.UserID, IP: auth.ClientIP(ctx),
				Payload: events.Payload(map[string]any{"all": true})}); err != nil {
				return err
			}
			out.Marked++
		}
		return nil
	})
	if err != nil {
		return nil, fault.Internal("mark notifications read", err)
	}
	return out, nil
}
