package tunnel

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"deckhand/platform"
)

// Routes is the service's route table (router and OpenAPI document).
func (s *Service) Routes() []platform.Route {
	tags := []string{"tunnel"}
	metricsHandler := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/tunnel/bindings", OperationID: "listBindings", Tags: tags,
			Summary: "The TCP ports listening in the container",
			Description: "Read from /proc/net/tcp and /proc/net/tcp6 every --tunnel-scan-interval (250 ms; an opened port " +
				"shows within 1 s), one entry per port: the addresses it listens on, the process (pid, program) when " +
				"this service may see it, and whether the tunnel and the proxy forward to it (exposed; reason when not: " +
				"deny list, one of the agent's own ports, bound to an unreachable address). Ports on --tunnel-ignore-ports " +
				"are left out. Opened and closed ports are sent to the notifier as port.opened / port.closed events.",
			Op: platform.ReadOp(s.ListBindings),
			Tool: &platform.Tool{Name: "tunnel_bindings", Title: "Listening ports",
				Description: "The TCP ports listening in the container: addresses, the listening program when visible, and whether " +
					"the agent's tunnel and proxy forward to it (a web app started with process_start shows here once it listens).",
				Text:     "{{range .bindings}}{{.port}} {{join .addresses \",\"}} {{with .program}}{{.}}{{end}} exposed={{.exposed}}\n{{end}}",
				ReadOnly: true, Idempotent: true}},
		{Method: http.MethodGet, Path: "/api/v1/tunnel/ws", OperationID: "openTunnel", Tags: tags, WebSocket: true, Status: http.StatusSwitchingProtocols,
			Summary: "Tunnel one TCP connection to a port over WebSocket",
			Description: "Connects to the port first (so a refusal is an HTTP answer: 400 INVALID for a port outside " +
				"1-65535, 403 PORT_DENIED for the agent's own ports, the deny list or a port other than the one the gateway's " +
				"proxy permissions admitted, 502 UPSTREAM_UNREACHABLE at once " +
				"when nothing listens), then upgrades. Binary frames carry the stream both ways. A text frame " +
				"{\"type\":\"close_write\"} is a half-close (the sender reached end of stream; the receiver shuts down " +
				"writing and keeps reading). Once both sides have half-closed the server closes with 1000; a failure " +
				"closes with 1011; DELETE .../sessions/{id} closes with 1000 \"session deleted\" and closes the port's " +
				"connection. The server pings every --tunnel-ping-interval (15 s) and cuts a peer silent for two. " +
				"Each tunnel is a session of kind websocket. Authentication is the gateway's (proxy permissions, program ssh " +
				"for port 22 and http for any other, rules matched against this port): " +
				"the deckhand tunnel client sends its token as Authorization: Bearer and as the deckhand_token " +
				"cookie, so a check on either works on this upgrade.",
			Op: platform.StreamOp(s.serveWS)},
		{Method: http.MethodGet, Path: "/api/v1/tunnel/sessions", OperationID: "listTunnelSessions", Tags: tags,
			Summary:     "The forwarded connections open now",
			Description: "Every forwarded connection is a session: a WebSocket tunnel (kind websocket) or one upstream connection of the reverse proxy (kind proxy). Oldest first; bytes_in is client to port, bytes_out port to client.",
			Op:          platform.ReadOp(s.ListSessions)},
		{Method: http.MethodDelete, Path: "/api/v1/tunnel/sessions/{session_id}", OperationID: "cutTunnelSession", Tags: tags,
			Summary:     "Cut a session",
			Description: "Closes both ends: the connection to the port and the client's (a WebSocket tunnel gets close 1000 \"session deleted\", which the deckhand tunnel client passes on by closing its local connection). Answers the session's final record; 404 NOT_FOUND for an unknown or ended session.",
			Op:          platform.Op(s.CutSession)},
		{Method: http.MethodGet, Path: "/api/v1/tunnel/tunnels", OperationID: "listTunnels", Tags: tags,
			Summary:     "Open tunnels by target",
			Description: "The open sessions grouped by the address they reach (port and target), with their count, kinds, ids, oldest start and bytes.",
			Op:          platform.ReadOp(s.ListTunnels)},
		{Method: http.MethodGet, Path: "/api/v1/tunnel/metrics", OperationID: "getTunnelMetrics", Tags: tags, ContentType: "text/plain; version=0.0.4",
			Summary: "Prometheus metrics",
			Description: "Prometheus text exposition format (prometheus/client_golang): deckhand_tunnel_sessions_open and " +
				"_sessions_total by kind, _bytes_total by direction and port, _dial_errors_total by port and reason, " +
				"_dial_duration_seconds and _proxy_request_duration_seconds histograms, _denied_total, _bindings, plus the " +
				"Go runtime and process collectors.",
			Op: platform.StreamOp(s.serveMetrics(metricsHandler))},
		{Method: platform.MethodAny, Path: "/proxy/{port}", OperationID: "proxyRoot", Tags: tags, Status: http.StatusPermanentRedirect,
			Summary:     "Redirect to /proxy/{port}/",
			Description: "308 to the same path with a trailing slash (after any X-Forwarded-Prefix), query kept, so an app's relative links resolve under its prefix.",
			Op:          platform.StreamOp(s.serveProxyRoot)},
		{Method: platform.MethodAny, Path: "/proxy/{port}/{path...}", OperationID: "proxy", Tags: tags,
			Summary: "HTTP reverse proxy to a port",
			Description: "Forwards the request to the port with /proxy/{port} taken off the path (X-Forwarded-Prefix names " +
				"it, after any prefix the gateway took). Host is the app's own address, localhost:{port}; the client's host " +
				"and scheme are in X-Forwarded-Host and X-Forwarded-Proto (through the gateway, its account of the client), " +
				"X-Forwarded-For names the client. The credential the gateway's proxy permissions consumed never reaches the " +
				"app. Nothing else is rewritten: the query, body, response headers (Location, cookies) and bodies pass as " +
				"they are. WebSocket " +
				"upgrades pass through (dev-server hot reload); responses stream. An app's root-relative links (/style.css) " +
				"leave the prefix and miss: a web app is previewed at the root of its own address (deckhand tunnel prints " +
				"that URL). Errors: 400 INVALID for a port outside " +
				"1-65535, 403 PORT_DENIED (the agent's own ports, the deny list, a port other than the one the gateway's proxy " +
				"permissions admitted: they judge {port}, program ssh for 22 and http for any other), 502 " +
				"UPSTREAM_UNREACHABLE when nothing listens, 502 BACKEND_ERROR for an " +
				"invalid upstream answer. Each upstream connection is a session of kind proxy (one per request). The app's " +
				"answers are its own: they do not get the agent's anti-framing headers (X-Frame-Options, frame-ancestors).",
			Frameable: true, Op: platform.StreamOp(s.serveProxy)},
		{Method: platform.MethodAny, Path: "/preview/{port}/{path...}", OperationID: "preview", Tags: tags,
			Summary: "HTTP reverse proxy to a port at the root of its own host",
			Description: "What a port preview host (`<project_id>-<container_id>-p<port>-1.<server_name>.<domain>`) reaches: " +
				"the same reverse proxy as /proxy/{port}/, judged the same way, except that the app is at the root of the " +
				"client's host, so X-Forwarded-Prefix is passed on as it came (none through a preview host) and the app's " +
				"root-relative links resolve. The app's answers are its own: they do not get the agent's anti-framing headers.",
			Frameable: true, Op: platform.StreamOp(s.servePreview)},
	}
}
