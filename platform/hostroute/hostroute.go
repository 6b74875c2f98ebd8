// Package hostroute owns the one reading of a container Host name,
// `<project_id>-<container_id>-<service>-<instance>.<server_name>.<domain>`:
// the agent's gateway routes by it inside a container and the platform
// proxy routes by it into containers, so the two can never disagree about
// which container and service a name means.
package hostroute

import (
	"net"
	"strconv"
	"strings"
)

// Route is a parsed container Host name.
type Route struct {
	// Prefix is `<project_id>-<container_id>`: ids may contain hyphens
	// (UUIDs do), so the two are told apart only by whoever knows the ids.
	Prefix  string
	Service string
	// Port is the container port a port preview names (service `p<port>`);
	// 0 for a named service.
	Port     int
	Instance int
	Server   string
}

// PortService is the service name of a port preview of port p.
func PortService(p int) string { return "p" + strconv.Itoa(p) }

// PortOf reads a port preview's service name, `p` and a port 1-65535 in
// canonical decimal (no sign, no leading zero), so one port has one name.
func PortOf(svc string) (int, bool) {
	d, ok := strings.CutPrefix(svc, "p")
	if !ok || d == "" || len(d) > 5 || d[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
	}
	p, _ := strconv.Atoi(d)
	if p < 1 || p > 65535 {
		return 0, false
	}
	return p, true
}

// Parse reads a Host header (port allowed) in the container form. The
// first label is parsed from the right: the instance number, then a
// service name from known (longest first) or a port preview `p<port>`,
// leaving the project and container prefix. It reports false for any
// other Host: an IP, `localhost`, a bare domain, and a name with a
// trailing dot (a second spelling of a name is never a second route).
func Parse(host, domain string, known []string) (Route, bool) {
	host = strings.ToLower(HostOnly(host))
	domain = strings.ToLower(strings.Trim(domain, "."))
	if domain == "" {
		return Route{}, false
	}
	rest, ok := strings.CutSuffix(host, "."+domain)
	if !ok {
		return Route{}, false
	}
	label, server, ok := strings.Cut(rest, ".")
	if !ok || server == "" || label == "" {
		return Route{}, false
	}
	i := strings.LastIndexByte(label, '-')
	if i < 0 {
		return Route{}, false
	}
	inst, err := strconv.Atoi(label[i+1:])
	if err != nil || inst < 1 || label[i+1] == '+' {
		return Route{}, false
	}
	head := label[:i]
	for _, svc := range known {
		// head ends in "-<svc>" with something before it (no concatenation:
		// this runs for every request).
		if n := len(head) - len(svc) - 1; n > 0 && head[n] == '-' && head[n+1:] == svc {
			return Route{Prefix: head[:n], Service: svc, Instance: inst, Server: server}, true
		}
	}
	if j := strings.LastIndexByte(head, '-'); j > 0 {
		if p, ok := PortOf(head[j+1:]); ok {
			return Route{Prefix: head[:j], Service: head[j+1:], Port: p, Instance: inst, Server: server}, true
		}
	}
	return Route{}, false
}

// HostOnly drops the port of a Host header.
func HostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}
