package contract

import (
	"context"
	"log/slog"
	"time"
)

// Seams between services. Services never call each other; when one needs
// another (programs write to the journal, a failed schedule becomes a
// notification) it writes to an interface defined here, and the agent wires
// the implementation: today both go to the agent's log, and the journal and
// notification services plug in behind the same interfaces when they land.
// Implementations must not block the caller for long: a crash report from
// the supervisor must never wait on a slow reader.

// JournalEntry is one structured line of the container's journal.
type JournalEntry struct {
	Time    time.Time      `json:"time"`
	Source  string         `json:"source" doc:"the service, program or \"agent\" that wrote it"`
	Level   string         `json:"level" enum:"debug,info,warn,error"`
	Message string         `json:"message"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// Journal takes structured entries from every service and the supervisor.
type Journal interface {
	Record(e JournalEntry)
}

// Kinds of agent events.
const (
	EventServiceCrashed = "service.crashed" // a supervised service stopped serving; it is being restarted
	EventProgramCrashed = "program.crashed" // a program a service runs exited unexpectedly
	EventScheduleFailed = "schedule.failed" // a scheduled job failed
	EventPortOpened     = "port.opened"     // a program started listening on a port
	EventPortClosed     = "port.closed"     // no program listens on a port any more
)

// Event is something a person should hear about.
type Event struct {
	Time   time.Time      `json:"time"`
	Kind   string         `json:"kind"`
	Source string         `json:"source"`
	Level  string         `json:"level" enum:"info,warn,error"`
	Title  string         `json:"title"`
	Body   string         `json:"body,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
}

// Notifier takes agent events.
type Notifier interface {
	Notify(e Event)
}

// LogJournal writes journal entries to a logger, one record each, until the
// journal service takes them.
type LogJournal struct{ Logger *slog.Logger }

// Record logs e at its level with its fields.
func (j LogJournal) Record(e JournalEntry) {
	args := []any{"journal", true, "source", e.Source}
	if !e.Time.IsZero() {
		args = append(args, "at", e.Time)
	}
	for k, v := range e.Fields {
		args = append(args, k, v)
	}
	j.Logger.Log(context.Background(), level(e.Level), e.Message, args...)
}

// LogNotifier writes events to a logger until the notification service
// takes them.
type LogNotifier struct{ Logger *slog.Logger }

// Notify logs e at its level.
func (n LogNotifier) Notify(e Event) {
	args := []any{"event", e.Kind, "source", e.Source}
	if e.Body != "" {
		args = append(args, "body", e.Body)
	}
	for k, v := range e.Data {
		args = append(args, k, v)
	}
	n.Logger.Log(context.Background(), level(e.Level), e.Title, args...)
}

func level(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
