package gateway

import (
	"net"
	"strconv"
	"strings"
)

// HostRoute is a parsed container Host name
// `<project_id>-<container_id>-<service>-<instance>.<server_name>.<domain>`.
type HostRoute struct {
	// Prefix is `<project_id>-<container_id>`: ids may contain hyphens
	// (UUIDs do), so the two are told apart only by the agent's own ids.
	Prefix   string
	Service  string
	Instance int
	Server   string
}

// ParseHost reads a Host header (port allowed) in the container form. The
// first label is parsed from the right: the instance number, then a service
// name from known (longest first), leaving the project and container prefix.
// It reports false for any other Host (an IP, `localhost`, a bare domain).
func ParseHost(host, domain string, known []string) (HostRoute, bool) {
	host = strings.ToLower(hostOnly(host))
	domain = strings.ToLower(strings.Trim(domain, "."))
	if domain == "" {
		return HostRoute{}, false
	}
	rest, ok := strings.CutSuffix(host, "."+domain)
	if !ok {
		return HostRoute{}, false
	}
	label, server, ok := strings.Cut(rest, ".")
	if !ok || server == "" || label == "" {
		return HostRoute{}, false
	}
	i := strings.LastIndexByte(label, '-')
	if i < 0 {
		return HostRoute{}, false
	}
	inst, err := strconv.Atoi(label[i+1:])
	if err != nil || inst < 1 || label[i+1] == '+' {
		return HostRoute{}, false
	}
	head := label[:i]
	for _, svc := range known {
		// head ends in "-<svc>" with something before it (no concatenation:
		// this runs for every request).
		if n := len(head) - len(svc) - 1; n > 0 && head[n] == '-' && head[n+1:] == svc {
			return HostRoute{Prefix: head[:n], Service: svc, Instance: inst, Server: server}, true
		}
	}
	return HostRoute{}, false
}

// hostOnly drops the port of a Host header.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}
