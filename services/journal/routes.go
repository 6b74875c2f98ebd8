package journal

import (
	"deckhand/platform"
)

// Routes is the journal's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"journal"}
	return []platform.Route{
		{Method: "GET", Path: "/api/v1/journal", OperationID: "readJournal", Tags: tags, Summary: "Read or follow the journal",
			Description: "Without cursor and since: the newest `limit` entries, oldest first (journalctl -n). With cursor: the " +
				"entries after it (before it with reverse=true); with since: from that time. format=json answers JSON lines " +
				"(application/x-ndjson), one entry per line with its cursor first; format=short answers journalctl's short text. " +
				"X-Journal-Cursor is where the next read continues. follow=true answers Server-Sent Events (text/event-stream): " +
				"the same first page, then every new matching entry as it is written, each event `entry` with id = its cursor " +
				"(data: the JSON line, or the short line); a reconnect with Last-Event-ID (what EventSource sends) or cursor= " +
				"resumes exactly after it. Comments keep the stream alive every 15 s; an `id:` without data moves the position " +
				"past entries that did not match. A resume older than the oldest kept entry first sends an event `gap`.",
			ContentType: "application/x-ndjson", Op: platform.StreamOp(s.serveRead)},
		{Method: "GET", Path: "/api/v1/journal/text", OperationID: "readJournalText", Tags: tags, Summary: "The newest entries as text",
			Description: "The newest `limit` matching entries (default 50), oldest first, in journalctl's short format as one " +
				"JSON string: what a model reads.",
			Op: platform.Op(s.ReadText),
			Tool: &platform.Tool{Name: "journal_query", Title: "Read the journal",
				Description: "Read the container agent's journal (its own events, the gateway's decisions, programs' output, " +
					"this server's tool calls): the newest entries matching the filters, oldest first, as short text lines.",
				Pages: "text", ReadOnly: true}},
		{Method: "POST", Path: "/api/v1/journal/flush", OperationID: "flushJournal", Tags: tags, Summary: "Write buffered entries to disk",
			Description: "Delivers what this process's writers have buffered and commits everything the journal holds in memory " +
				"(entries are otherwise committed every 100 ms); answers how many entries this flush wrote.",
			Op: platform.ReadOp(s.Flush)},
		{Method: "GET", Path: "/api/v1/journal/stats", OperationID: "getJournalStats", Tags: tags, Summary: "Journal statistics",
			Description: "Entries and bytes kept, the oldest and newest entry's time, counts by source and by level, and totals.",
			Op:          platform.ReadOp(s.Stats)},
	}
}
