package takeover

import (
	"net/http"

	"deckhand/display/core"
	"deckhand/platform"
)

// Routes are the takeover view, its WebSocket and the pause.
func (s *Service) Routes() []platform.Route {
	op := core.Route
	tk := "Human takeover: a person watches or drives the desktop in the browser (noVNC from Debian) through this " +
		"service, under the same request policy and proxy permissions as every route; x11vnc serves it on a unix " +
		"socket in a private directory, with no TCP port. "
	page := op(http.MethodGet, "/vnc/", "openTakeoverView", "The takeover view", tk+"Opens noVNC connected to "+
		"vnc/websockify. mode=control (default) lets the person drive: the agent's running input finishes first, then "+
		"every input route answers 409 TAKEN_OVER until they leave. mode=view only watches (x11vnc -viewonly).",
		platform.Op(s.VNCPage))
	page.ContentType = "text/html"
	ws := op(http.MethodGet, "/vnc/websockify", "connectTakeover", "The takeover's VNC WebSocket", tk+
		"RFB over a binary WebSocket between noVNC and x11vnc, in the mode asked.", platform.StreamOp(s.ServeVNC))
	ws.WebSocket, ws.Status = true, http.StatusSwitchingProtocols
	asset := op(http.MethodGet, "/vnc/{file...}", "getTakeoverAsset", "A file of the noVNC client",
		"The files of Debian's noVNC client that the takeover page loads.", platform.Op(s.VNCAsset))
	asset.ContentType = "application/octet-stream"
	return []platform.Route{page, ws, asset,
		op(http.MethodGet, "/takeover", "getTakeover", "Who drives the desktop", tk+"Whether the agent paused, "+
			"and how many people drive or watch.", platform.ReadOp(s.TakeoverState)),
		op(http.MethodPost, "/takeover", "pauseAgent", "Pause the agent for a person", tk+"The agent asks a person "+
			"to drive (reason says what for): its running input finishes, then its input routes answer 409 "+
			"TAKEN_OVER until DELETE takeover.", platform.Op(s.PauseAgent)),
		op(http.MethodDelete, "/takeover", "resumeAgent", "Resume the agent", "Ends the pause; while a person is "+
			"still connected with control the agent's input stays refused.", platform.ReadOp(s.ResumeAgent)),
	}
}
