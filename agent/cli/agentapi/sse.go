package agentapi

import (
	"bufio"
	"io"
	"strings"
)

// Event is one Server-Sent Event.
type Event struct {
	ID    string // the last id: field seen (it persists across events, as EventSource keeps it)
	Event string // the event: field ("message" when absent)
	Data  string // the data: lines joined with \n
	// HasData is false for an event that only moved the id (a position
	// past entries that did not match).
	HasData bool
}

// ReadEvents reads the text/event-stream r and calls fn for each event
// (including id-only ones) until r ends or fn fails.
func ReadEvents(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var (
		ev      Event
		data    []string
		pending bool
	)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if pending {
				ev.Data, ev.HasData = strings.Join(data, "\n"), len(data) > 0
				if ev.Event == "" {
					ev.Event = "message"
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data, pending = Event{ID: ev.ID}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment (keep-alive)
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID, pending = value, true
		case "event":
			ev.Event, pending = value, true
		case "data":
			data, pending = append(data, value), true
		}
	}
	return sc.Err()
}
