package notifications

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the service's route table. The fixed paths come before
// {display}, which Fiber matches in order.
func (s *Service) Routes() []platform.Route {
	tags := []string{"notifications"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/notifications/stream", OperationID: "streamNotifications", Tags: tags, WebSocket: true,
			Summary: "Stream notifications (WebSocket), resuming from a sequence number",
			Description: "Upgrades to a WebSocket of JSON text frames: hello {type, seq, oldest}, then every kept message with " +
				"seq > since, then live messages {type notification|dismissed, seq, time, notification}. A gap frame " +
				"{type gap, from, to} names messages that are no longer kept. display limits messages to one display. " +
				"Reconnect with since=<last seq seen>. A client 256 messages behind is closed with 4000 and resumes. " +
				"The client may send {\"type\":\"dismiss\",\"ids\":[...]}. A request that is not a WebSocket upgrade is 400.",
			Op: platform.StreamOp(s.serveStream)},
		{Method: http.MethodPost, Path: "/api/v1/notifications/dismiss", OperationID: "dismissNotifications", Tags: tags, Summary: "Dismiss notifications",
			Description: "Dismisses the notifications named by ids, or with all true every open one (of display, when given). " +
				"Each becomes a dismissed stream message; a desktop notification's program gets NotificationClosed (reason 2). " +
				"Unknown ids are 404 and nothing is dismissed; ids already dismissed are skipped.",
			Op: platform.Op(s.Dismiss)},
		{Method: http.MethodDelete, Path: "/api/v1/notifications/dismiss", OperationID: "clearNotifications", Tags: tags, Summary: "Dismiss every open notification",
			Description: "Clears all open notifications, or those of display. Answers what was dismissed.",
			Op:          platform.Op(s.Clear)},
		{Method: http.MethodPost, Path: IngestPath, OperationID: "ingestEvent", Tags: []string{"internal"}, Summary: "Agent events from the agent's relay",
			Description: "Loopback only, never through the gateway, with the key from <data>/notifications/ingest.key in " +
				IngestKeyHeader + ": how the agent's notifier reaches this service when it runs as its own process. " +
				"Body: an agent event {time, kind, source, level, title, body, data}. 202; 404 through the gateway; 403 from " +
				"another machine; 401 wrong or missing key.",
			Status: http.StatusAccepted, Op: platform.CommandOp(s.Ingest)},
		{Method: http.MethodGet, Path: "/api/v1/notifications/{display}", OperationID: "listOpenNotifications", Tags: tags, Summary: "Open notifications of a display",
			Description: "The open (not dismissed, not expired) notifications of display :N (a bare N is :N; write : as %3A if " +
				"a client insists) or of agent, oldest first, with the stream's newest seq. 400 for a display that is neither.",
			Op: platform.Op(s.Open)},
	}
}
