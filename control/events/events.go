// Package events owns the control plane's append-only audit log: every
// platform action (user created, token disabled, permissions changed ...)
// is recorded here, inside the same store transaction as the change it
// describes, so the log and the state never disagree. Records are never
// updated; deletion (DeleteBatch, the cleanup and retention paths) is the
// only change.
//
// Layout: the log is a declared table (Table): bucket "events", key =
// <created_at as 19-digit Unix nanoseconds>-<12 hex> (time order; the hex
// part makes keys unique across replicas and keeps a process's own events
// of one instant in append order), the event id "evt_" + key. Every field
// a list filters on is an indexed field, so the store keeps the indexes in
// the transaction of the event and lists are store.Page queries (query.go);
// on PostgreSQL it is the table events. Bucket "events_projects" holds one
// key per project that has events, so a user's visible projects are found
// without reading events.
//
// The HTTP domain is package control/eventlog.
package events

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"deckhand/platform/store"
)

// Buckets of the log.
const (
	Bucket         = "events"
	ProjectsBucket = "events_projects"
	// legacyIndexBucket held the hand-built index entries of an earlier
	// layout; Log.DropLegacyIndex removes it.
	legacyIndexBucket = "events_by"
)

// Table is the log as a declared table: the fields lists filter and sort
// on, each indexed.
var Table = store.Declare(Bucket, []store.Field[Event]{
	store.Text("event_type", func(e *Event) string { return e.EventType }),
	store.Text("resource_type", func(e *Event) string { return e.ResourceType }),
	store.OptionalText("resource_id", func(e *Event) string { return e.ResourceID }),
	store.OptionalText("project_id", func(e *Event) string { return e.ProjectID }),
	store.OptionalText("container_id", func(e *Event) string { return e.ContainerID }),
	store.OptionalText("realm_id", func(e *Event) string { return e.RealmID }),
	store.OptionalText("user_id", func(e *Event) string { return e.UserID }),
	store.OptionalText("actor_id", func(e *Event) string { return e.ActorID }),
	store.Time("created_at", func(e *Event) time.Time { return e.CreatedAt }),
},
	filterIndex("event_type", true),
	filterIndex("resource_type", false),
	filterIndex("resource_id", false),
	filterIndex("project_id", false),
	filterIndex("container_id", false),
	filterIndex("realm_id", false),
	filterIndex("user_id", false),
	filterIndex("actor_id", false),
)

// filterIndex indexes a filter's field, carrying the fields a user's
// view checks (owner, actor, project) so that a user's count and page
// over one filter read the index alone on PostgreSQL.
func filterIndex(field string, sort bool) store.Index {
	return store.Index{Fields: []string{field}, Sort: sort, Include: []string{"user_id", "actor_id", "project_id"}}
}

// Tables are the tables this package declares.
var Tables = []*store.Table{Table}

// maxValue bounds an indexed value.
const maxValue = 255

// Event is one audit record.
type Event struct {
	ID           string `json:"id"`
	EventType    string `json:"event_type"`
	ResourceType string `json:"resource_type"`
	ResourceID   string `json:"resource_id"`
	ProjectID    string `json:"project_id,omitempty"`
	ContainerID  string `json:"container_id,omitempty"`
	RealmID      string `json:"realm_id,omitempty"`
	// UserID is whose resource the event is about (the owner). Append
	// fills it when empty: the resource id for user events, else the actor.
	UserID string `json:"user_id,omitempty"`
	// ActorID is who acted (an admin acting on a user's resource differs
	// from UserID). The owner and the actor both see the event.
	ActorID   string          `json:"actor_id,omitempty"`
	IP        string          `json:"ip,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

var (
	counter atomic.Uint32
	node    = func() uint32 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}()
)

// TimeKey is the key prefix of the instant t: keys of events created at or
// after t sort at or after it.
func TimeKey(t time.Time) string {
	return fmt.Sprintf("%019d", max(t.UnixNano(), 0))
}

// newKey is a fresh event key for an event created at t.
func newKey(t time.Time) string {
	var r [2]byte
	_, _ = rand.Read(r[:])
	// node and counter keep keys of one process ordered; the random bytes
	// separate replicas that share a node value by chance.
	return fmt.Sprintf("%s-%08x%04x", TimeKey(t), node+counter.Add(1), uint16(r[0])<<8|uint16(r[1]))
}

// KeyOf returns the store key of an event id ("" when id is malformed).
func KeyOf(id string) string {
	k, ok := strings.CutPrefix(id, "evt_")
	if !ok || len(k) != 32 || k[19] != '-' {
		return ""
	}
	if _, err := strconv.ParseUint(k[:19], 10, 64); err != nil {
		return ""
	}
	if _, err := hex.DecodeString(k[20:]); err != nil {
		return ""
	}
	return k
}

// CheckValue reports why v cannot be an indexed value ("" when it can).
func CheckValue(v string) string {
	if len(v) > maxValue {
		return fmt.Sprintf("must be at most %d bytes", maxValue)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "must not contain control characters"
	}
	return ""
}

// Append writes ev inside tx, assigning its id and, when unset, its time
// and owner; its index entries commit with it. Call it from the same
// Update that makes the change being recorded.
func Append(tx *store.Tx, now time.Time, ev Event) (Event, error) {
	if ev.EventType == "" || ev.ResourceType == "" {
		return Event{}, fmt.Errorf("event: event_type and resource_type are required")
	}
	for name, v := range map[string]string{"event_type": ev.EventType, "resource_type": ev.ResourceType,
		"resource_id": ev.ResourceID, "project_id": ev.ProjectID, "container_id": ev.ContainerID,
		"realm_id": ev.RealmID, "user_id": ev.UserID, "actor_id": ev.ActorID} {
		if why := CheckValue(v); why != "" {
			return Event{}, fmt.Errorf("event %s: %s", name, why)
		}
	}
	if ev.UserID == "" {
		ev.UserID = ev.ActorID
		if ev.ResourceType == ResUser {
			ev.UserID = ev.ResourceID
		}
	}
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = now
	}
	ev.CreatedAt = ev.CreatedAt.UTC()
	key := newKey(ev.CreatedAt)
	ev.ID = "evt_" + key
	if err := tx.Put(Bucket, key, ev); err != nil {
		return Event{}, err
	}
	if ev.ProjectID != "" && tx.GetRaw(ProjectsBucket, ev.ProjectID) == nil {
		if err := tx.PutRaw(ProjectsBucket, ev.ProjectID, nil); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

// Payload marshals v for Event.Payload; it never carries secrets.
func Payload(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// Get loads the event with id (nil when absent or malformed).
func Get(tx *store.Tx, id string) (*Event, error) {
	key := KeyOf(id)
	if key == "" {
		return nil, nil
	}
	var ev Event
	ok, err := tx.Get(Bucket, key, &ev)
	if err != nil || !ok {
		return nil, err
	}
	return &ev, nil
}

// Delete removes the event with id (the store drops its index entries
// with it); false when there was none.
func Delete(tx *store.Tx, id string) (bool, error) {
	key := KeyOf(id)
	if key == "" || tx.GetRaw(Bucket, key) == nil {
		return false, nil
	}
	return true, tx.Delete(Bucket, key)
}

// List returns events in creation order (oldest first).
func List(tx *store.Tx) ([]Event, error) { return store.Under[Event](tx, Bucket, "") }
