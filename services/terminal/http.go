package terminal

import (
	"context"
	"math"
	"net/http"
	"sort"
	"strconv"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Routes is the service's route table.
func (svc *Service) Routes() []platform.Route {
	tags := []string{"terminal"}
	idQuery := platform.Param{Name: "id", Description: "terminal session id", Required: true}
	return []platform.Route{
		{Method: http.MethodPost, Path: "/api/v1/terminal/create", Tags: tags, Status: http.StatusCreated,
			Summary: "Start a shell on a new PTY",
			Description: "Starts the shell (default $SHELL, then /bin/bash, then /bin/sh) as a session leader on a new " +
				"pseudo-terminal, in cwd (default the home directory), with the service's environment minus DECKHAND_* " +
				"plus TERM=xterm-256color and env. The session lives until the shell exits, it is deleted, or it has " +
				"had no client for the idle timeout (30 minutes by default). A shell that cannot start is a 400 " +
				"(INVALID when it is missing or not executable, SHELL_START_FAILED when exec fails) naming the reason.",
			Body: CreateRequest{}, Response: CreateResponse{}, Handler: svc.handleCreate},
		{Method: http.MethodGet, Path: "/api/v1/terminal/ws", Tags: tags, WebSocket: true, Status: http.StatusSwitchingProtocols,
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
			Query: []platform.Param{
				{Name: "id", Description: "session to attach; absent creates one"},
				{Name: "cols", Type: "integer", Range: &platform.Range{Min: 1, Max: maxCols}, Description: "size of a new session, or resizes the attached one (with rows)"},
				{Name: "rows", Type: "integer", Range: &platform.Range{Min: 1, Max: maxRows}, Description: "size of a new session, or resizes the attached one (with cols)"},
				{Name: "shell", Description: "shell of a new session"},
				{Name: "cwd", Description: "working directory of a new session"},
			},
			HTTP: http.HandlerFunc(svc.serveWS)},
		{Method: http.MethodGet, Path: "/api/v1/terminal/sessions", Tags: tags,
			Summary:     "List sessions",
			Description: "Every live session, and ended ones (running false, exit_code set) for 10 minutes after they end or until deleted, oldest first.",
			Response:    []SessionInfo{}, Handler: svc.handleList},
		{Method: http.MethodGet, Path: "/api/v1/terminal/sessions/{terminal_id}", Tags: tags,
			Summary: "One session", Response: SessionInfo{}, Handler: svc.handleGet},
		{Method: http.MethodGet, Path: "/api/v1/terminal/history/{terminal_id}", Tags: tags, ContentType: "text/plain",
			Summary: "Scrollback as text",
			Description: "The session's scrollback (the last 1 MiB of output) as text/plain: the raw bytes the WebSocket " +
				"replays, escape sequences included. strip=true removes escape sequences and carriage returns.",
			Query:   []platform.Param{{Name: "strip", Type: "boolean", Default: "false", Description: "remove escape sequences"}},
			Handler: svc.handleHistory},
		{Method: http.MethodGet, Path: "/api/v1/terminal/raw", Tags: tags, ContentType: "application/octet-stream",
			Summary: "Raw output bytes from an offset",
			Description: "Output bytes from absolute offset since (default 0) to now. X-Terminal-Offset is the offset of " +
				"the first byte returned (later than since when the scrollback no longer holds it; X-Terminal-Truncated " +
				"is then true) and X-Terminal-Next the offset to pass as since next time.",
			Query: []platform.Param{idQuery,
				{Name: "since", Type: "integer", Range: &platform.Range{Min: 0, Max: math.Inf(1)}, Default: "0",
					Description: "absolute output offset (session's output_bytes is the end)"}},
			Handler: svc.handleRaw},
		{Method: http.MethodGet, Path: "/api/v1/terminal/screenshot", Tags: tags, ContentType: "image/png",
			Summary: "The current screen as PNG or text",
			Description: "Rendered from a VT100/xterm screen model of the session (7x13 pixel cells, xterm colours, " +
				"cursor shown inverted). format=text answers the screen's lines as text/plain, trailing blanks trimmed. " +
				"X-Terminal-Screen-Exact is false when output came faster than the model parses it and some was " +
				"skipped, until the screen is cleared, the alternate screen entered or a screenful of lines printed.",
			Query: []platform.Param{idQuery,
				{Name: "format", Enum: []string{"png", "text"}, Default: "png"}},
			Handler: svc.handleScreenshot},
		{Method: http.MethodDelete, Path: "/api/v1/terminal/{terminal_id}", Tags: tags,
			Summary: "End a session",
			Description: "Sends SIGHUP to the shell's process group (what closing a terminal does), SIGKILL after a grace " +
				"period (3s), waits until the shell is reaped, closes attached clients after an exit message, and " +
				"answers the session's final record.",
			Response: SessionInfo{}, Handler: svc.handleDelete},
		{Method: http.MethodGet, Path: "/", Tags: []string{"web"}, ContentType: "text/html",
			Summary:     "Web terminal",
			Description: "xterm.js page: lists sessions, opens or creates one, follows the window size, reconnects after a drop. Works under a path prefix (the gateway's /_/terminal/).",
			Handler:     svc.handleIndex},
		{Method: http.MethodGet, Path: "/assets/{name}", Tags: []string{"web"},
			Summary: "Static files of the web terminal", Handler: svc.handleAsset},
	}
}

func (svc *Service) handleCreate(c fiber.Ctx) error {
	var req CreateRequest
	if err := platform.Decode(c, &req); err != nil {
		return err
	}
	s, err := svc.create(req)
	if err != nil {
		return err
	}
	in := s.info()
	return platform.JSON(c, http.StatusCreated, CreateResponse{
		ID: in.ID, PID: in.PID, Shell: in.Shell, Cols: in.Cols, Rows: in.Rows, CreatedAt: in.CreatedAt})
}

func (svc *Service) list() []SessionInfo {
	svc.mu.Lock()
	all := make([]*Session, 0, len(svc.sessions))
	for _, s := range svc.sessions {
		all = append(all, s)
	}
	svc.mu.Unlock()
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		out = append(out, s.info())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (svc *Service) handleList(c fiber.Ctx) error {
	return platform.JSON(c, http.StatusOK, svc.list())
}

func (svc *Service) handleGet(c fiber.Ctx) error {
	s, err := svc.get(c.Params("terminal_id"))
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, s.info())
}

func (svc *Service) handleHistory(c fiber.Ctx) error {
	s, err := svc.get(c.Params("terminal_id"))
	if err != nil {
		return err
	}
	s.mu.Lock()
	data := s.ring.since(0)
	s.mu.Unlock()
	if platform.QueryOf(c).Bool("strip") {
		data = stripANSI(data)
	}
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	return c.Send(data)
}

func (svc *Service) handleRaw(c fiber.Ctx) error {
	s, err := svc.sessionFromQuery(c)
	if err != nil {
		return err
	}
	since := platform.QueryOf(c).Int("since")
	s.mu.Lock()
	total, oldest := s.ring.total, s.ring.oldest()
	var data []byte
	if since <= total {
		data = s.ring.since(since)
	}
	s.mu.Unlock()
	if since > total {
		return platform.Invalid("since", "is past the end of the output (%d bytes so far)", total)
	}
	first := max(since, oldest)
	c.Set("X-Terminal-Offset", strconv.FormatInt(first, 10))
	c.Set("X-Terminal-Next", strconv.FormatInt(first+int64(len(data)), 10))
	c.Set("X-Terminal-Truncated", strconv.FormatBool(first > since))
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	return c.Send(data)
}

func (svc *Service) handleScreenshot(c fiber.Ctx) error {
	s, err := svc.sessionFromQuery(c)
	if err != nil {
		return err
	}
	g := s.screen()
	c.Set("X-Terminal-Screen-Exact", strconv.FormatBool(g.exact))
	if platform.QueryOf(c).String("format") == "text" {
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.SendString(g.text())
	}
	b, err := g.png()
	if err != nil {
		return platform.Internal("render the screen", err)
	}
	c.Set(fiber.HeaderContentType, "image/png")
	return c.Send(b)
}

func (svc *Service) handleDelete(c fiber.Ctx) error {
	id := c.Params("terminal_id")
	s, err := svc.get(id)
	if err != nil {
		return err
	}
	if err := svc.remove(context.Background(), id); err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, s.info())
}

// sessionFromQuery is the session named by the required id parameter.
func (svc *Service) sessionFromQuery(c fiber.Ctx) (*Session, error) {
	return svc.get(platform.QueryOf(c).String("id"))
}

// stripANSI drops escape sequences (CSI, OSC, DCS and two-byte ESC ones),
// carriage returns and other C0 controls except newline and tab.
func stripANSI(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		b := in[i]
		if b != 0x1b {
			if b >= 0x20 || b == '\n' || b == '\t' {
				out = append(out, b)
			}
			continue
		}
		if i+1 >= len(in) {
			break
		}
		i++
		switch in[i] {
		case '[': // CSI: parameters then one final byte 0x40-0x7e
			for i+1 < len(in) {
				i++
				if in[i] >= 0x40 && in[i] <= 0x7e {
					break
				}
			}
		case ']', 'P', '_', '^': // string until BEL or ST
			for i+1 < len(in) {
				i++
				if in[i] == 0x07 {
					break
				}
				if in[i] == 0x1b && i+1 < len(in) && in[i+1] == '\\' {
					i++
					break
				}
			}
		case '(', ')', '*', '+', '#', '%': // designators take one more byte
			if i+1 < len(in) {
				i++
			}
		}
	}
	return out
}
