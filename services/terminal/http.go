package terminal

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the service's route table.
func (svc *Service) Routes() []platform.Route {
	tags := []string{"terminal"}
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/terminal/create", OperationID: "createTerminal", Tags: tags, Status: http.StatusCreated,
			Summary: "Start a shell on a new PTY",
			Description: "Starts the shell (default $SHELL, then /bin/bash, then /bin/sh) as a session leader on a new " +
				"pseudo-terminal, in cwd (default the home directory), with the service's environment minus DECKHAND_* " +
				"plus TERM=xterm-256color and env. The session lives until the shell exits, it is deleted, or it has " +
				"had no client for the idle timeout (30 minutes by default). A shell that cannot start is a 400 " +
				"(INVALID when it is missing or not executable, SHELL_START_FAILED when exec fails) naming the reason.",
			Op: platform.Op(svc.Create)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/ws", OperationID: "attachTerminal", Tags: tags, WebSocket: true, Status: http.StatusSwitchingProtocols,
			Summary: "Attach to a session over WebSocket (without id: create one)",
			Description: "Binary frames carry raw bytes both ways (PTY output to the client, keystrokes to the PTY). " +
				"Text frames carry JSON control messages: the client sends {\"type\":\"resize\",\"cols\":N,\"rows\":M} " +
				"(the last client to resize sets the size); the server sends {\"type\":\"error\",\"message\"} for a bad " +
				"control message (the session continues) and {\"type\":\"exit\",\"code\":N} after the last output when " +
				"the shell ends (128+N for signal N), then closes with 1000. On attach the server first replays the " +
				"scrollback (up to 1 MiB) raw; once output has outgrown it, it sends instead a redraw of the screen " +
				"(reset, cells with their attributes, alternate screen, input modes, cursor). Several clients may attach; each gets every byte. A client that cannot keep " +
				"up (8 MiB queued) is closed with 1008 and never slows the shell or the other clients. The server pings " +
				"every 30s (--terminal-ping-interval) and drops a client that answers none for 2.5 intervals. The agent's request policy applies " +
				"before the upgrade: a foreign Host gets 421 MISDIRECTED_REQUEST; a browser Origin must be this service's own " +
				"(through the gateway: the gateway's), under --domain or in --allowed-origins (403 FORBIDDEN otherwise; " +
				"a loopback origin on another port is another program and is refused). Unknown id: 404 NOT_FOUND. " +
				"A request that is not a WebSocket upgrade, or a handshake gorilla/websocket refuses, gets 400 BAD_REQUEST; " +
				"a bad query parameter 400 INVALID naming it. Every refusal comes before the upgrade, with the service's error body.",
			Op: platform.StreamOp(svc.serveWS)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/sessions", OperationID: "listTerminals", Tags: tags,
			Summary:     "List sessions",
			Description: "Every live session, and ended ones (running false, exit_code set) for 10 minutes after they end or until deleted, oldest first.",
			Op:          platform.ReadOp(svc.List)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/sessions/{terminal_id}", OperationID: "getTerminal", Tags: tags,
			Summary: "One session", Op: platform.Op(svc.Get)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/history/{terminal_id}", OperationID: "getTerminalHistory", Tags: tags, ContentType: "text/plain",
			Summary: "Scrollback as text",
			Description: "The session's scrollback (the last 1 MiB of output) as text/plain: the raw bytes the WebSocket " +
				"replays, escape sequences included. strip=true removes escape sequences and carriage returns.",
			Op: platform.Op(svc.History)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/raw", OperationID: "getTerminalRaw", Tags: tags, ContentType: "application/octet-stream",
			Summary: "Raw output bytes from an offset",
			Description: "Output bytes from absolute offset since (default 0) to now. X-Terminal-Offset is the offset of " +
				"the first byte returned (later than since when the scrollback no longer holds it; X-Terminal-Truncated " +
				"is then true) and X-Terminal-Next the offset to pass as since next time.",
			Op: platform.Op(svc.Raw)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/screenshot", OperationID: "getTerminalScreenshot", Tags: tags, ContentType: "image/png",
			Summary: "The current screen as PNG or text",
			Description: "Rendered from a VT100/xterm screen model of the session (7x13 pixel cells, xterm colours, " +
				"cursor shown inverted). format=text answers the screen's lines as text/plain, trailing blanks trimmed. " +
				"X-Terminal-Screen-Exact is false when output came faster than the model parses it and some was " +
				"skipped, until the screen is cleared, the alternate screen entered or a screenful of lines printed.",
			Op: platform.Op(svc.Screenshot)},
		{Method: http.MethodDelete, Path: "/api/v1/terminal/{terminal_id}", OperationID: "deleteTerminal", Tags: tags,
			Summary: "End a session",
			Description: "Sends SIGHUP to the shell's process group (what closing a terminal does), SIGKILL after a grace " +
				"period (3s), waits until the shell is reaped, closes attached clients after an exit message, and " +
				"answers the session's final record.",
			Op: platform.Op(svc.Delete)},
		{Method: http.MethodGet, Path: "/", OperationID: "getWebTerminal", Tags: []string{"web"}, ContentType: "text/html",
			Summary: "Web terminal",
			Description: "xterm.js page: lists sessions (with how many clients each has attached), opens or creates one, follows the window size, " +
				"reconnects after a drop. The page remembers its session in the URL fragment and the tab's sessionStorage, so a reload " +
				"(or the bare URL in the same tab) reattaches to it and the replay brings the screen back; \"New terminal\" starts another " +
				"shell. Works under a path prefix (the gateway's /_/terminal/).",
			Op: platform.Op(svc.Index)},
		{Method: http.MethodGet, Path: "/assets/{name}", OperationID: "getWebAsset", Tags: []string{"web"},
			Summary: "Static files of the web terminal", ContentType: "text/javascript", Op: platform.Op(svc.Asset)},
	}
}
