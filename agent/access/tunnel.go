package access

import (
	"net/url"
	"strconv"
	"strings"
)

// tunnelService is the service whose routes reach other ports.
const tunnelService = "tunnel"

// tunnelWSRoute is the tunnel service's WebSocket route (port in the query).
const tunnelWSRoute = "/api/v1/tunnel/ws"

// tunnelledPort is the port a request to the tunnel service reaches, read
// as that service routes it: its router matches the raw path without case
// and without trailing slashes, the reverse proxy takes the port from the
// decoded path's first segment after /proxy/ (canonical decimal only),
// the WebSocket route from its port parameter. ok is false for the
// tunnel's own routes (sessions, bindings, metrics) and for a port that
// route would refuse; such a request is judged as the services program,
// and the port the gateway hands on (the tunnel's own, an agent port)
// lets it reach no other port.
func tunnelledPort(path string, query func(string) string) (int, bool) {
	route := strings.ToLower(path)
	if len(route) > 1 {
		route = strings.TrimRight(route, "/")
	}
	switch {
	case route == tunnelWSRoute:
		if query == nil {
			return 0, false
		}
		return canonicalPort(query("port"))
	case strings.HasPrefix(route, "/proxy/"), strings.HasPrefix(route, "/preview/"):
		u, err := url.ParseRequestURI(path)
		if err != nil {
			return 0, false
		}
		rest, ok := strings.CutPrefix(u.Path, "/proxy/")
		if !ok {
			if rest, ok = strings.CutPrefix(u.Path, "/preview/"); !ok {
				return 0, false
			}
		}
		seg, _, _ := strings.Cut(rest, "/")
		return canonicalPort(seg)
	}
	return 0, false
}

// canonicalPort reads a port written as the tunnel requires it: decimal
// digits without sign or leading zero, 1-65535.
func canonicalPort(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}
