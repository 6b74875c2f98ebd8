// Package events owns the control plane's append-only audit log: every
// platform action (user created, token disabled, permissions changed ...)
// is recorded here, inside the same store transaction as the change it
// describes, so the log and the state never disagree. Records are never
// updated; only the retention endpoints (their own issue) delete them.
package events

import (
	"encoding/json"
	"fmt"
	"time"

	"deckhand/platform/store"
)

// Bucket holds events keyed by a zero-padded sequence, so key order is
// creation order.
const Bucket = "events"

// Event is one audit record.
type Event struct {
	ID           string          `json:"id"`
	EventType    string          `json:"event_type"`
	ResourceType string          `json:"resource_type"`
	ResourceID   string          `json:"resource_id"`
	ProjectID    string          `json:"project_id,omitempty"`
	ContainerID  string          `json:"container_id,omitempty"`
	RealmID      string          `json:"realm_id,omitempty"`
	ActorID      string          `json:"actor_id,omitempty"`
	IP           string          `json:"ip,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
}

// Append writes ev inside tx, assigning its id and, when unset, its time.
// Call it from the same Update that makes the change being recorded.
func Append(tx *store.Tx, now time.Time, ev Event) (Event, error) {
	seq, err := tx.NextSeq(Bucket)
	if err != nil {
		return Event{}, fmt.Errorf("event sequence: %w", err)
	}
	ev.ID = fmt.Sprintf("evt_%d", seq)
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = now.UTC()
	}
	if err := tx.Put(Bucket, store.SeqKey(seq), ev); err != nil {
		return Event{}, err
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

// List returns events in creation order (oldest first).
func List(tx *store.Tx) ([]Event, error) {
	var out []Event
	err := tx.ForEach(Bucket, func(_ string, raw []byte) error {
		var ev Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}
