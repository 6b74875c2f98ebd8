package netconf

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Network types (docs/spec/interface.md).
const (
	TypeSOCKS5 = "socks5"
	TypeHTTP   = "http"
	TypeHTTPS  = "https"
	TypeBlock  = "block"
)

// Document is the effective configuration the control plane gives the
// container's own agent (GET /api/v1/containers/{id}/network/effective,
// signed). Unlike the public view it carries the proxy's credentials in
// Proxy's userinfo: the agent is the one component that dials with them.
type Document struct {
	Container string `json:"container_id"`
	Type      string `json:"type"`
	// Proxy is <scheme>://[user:pass@]host:port ("" for block without one).
	Proxy      string   `json:"proxy,omitempty"`
	DNSServers []string `json:"dns_servers"`
	// Running is the state asked for with start and stop: the rules are
	// in force only while it is true.
	Running bool     `json:"running"`
	Allow   []string `json:"allow,omitempty"`
	Deny    []string `json:"deny,omitempty"`
	// Version changes with every PUT, start or stop (the ETag).
	Version      int64     `json:"version"`
	ConfiguredAt time.Time `json:"configured_at"`
}

// Compiled is a validated Document ready to enforce.
type Compiled struct {
	Doc   *Document
	Proxy *url.URL // nil: none (block)
	DNS   []netip.AddrPort
	Lists Lists
}

// Compile validates d whole.
func Compile(d *Document) (*Compiled, error) {
	c := &Compiled{Doc: d}
	switch d.Type {
	case TypeSOCKS5, TypeHTTP, TypeHTTPS, TypeBlock:
	default:
		return nil, fmt.Errorf("type: must be socks5, http, https or block, got %q", d.Type)
	}
	if d.Type != TypeBlock {
		if d.Proxy == "" {
			return nil, fmt.Errorf("proxy: required for type %s", d.Type)
		}
		u, err := url.Parse(d.Proxy)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("proxy: not a <scheme>://host:port URL")
		}
		scheme := strings.ToLower(u.Scheme)
		if scheme != d.Type && !(d.Type == TypeSOCKS5 && scheme == "socks5h") {
			return nil, fmt.Errorf("proxy: scheme %q does not fit type %s", u.Scheme, d.Type)
		}
		if u.Port() == "" {
			u.Host = u.Host + ":" + DefaultPort(d.Type)
		}
		c.Proxy = u
	}
	if len(d.DNSServers) > 4 {
		return nil, fmt.Errorf("dns_servers: at most 4 entries")
	}
	for _, s := range d.DNSServers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			ap, err2 := netip.ParseAddrPort(s)
			if err2 != nil {
				return nil, fmt.Errorf("dns_servers: %q is not an IP address", s)
			}
			c.DNS = append(c.DNS, ap)
			continue
		}
		c.DNS = append(c.DNS, netip.AddrPortFrom(a.Unmap(), 53))
	}
	ls, err := CompileLists(d.Allow, d.Deny)
	if err != nil {
		return nil, err
	}
	c.Lists = ls
	return c, nil
}

// DefaultPort is a proxy type's port when its URL names none.
func DefaultPort(typ string) string {
	switch typ {
	case TypeSOCKS5:
		return "1080"
	case TypeHTTPS:
		return "443"
	}
	return "80"
}

// Status is what the agent reports (POST .../network/remote-status) and
// the control plane shows as remote_status.
type Status struct {
	// IsRunning: the rules are in force in the container now.
	IsRunning bool `json:"is_running"`
	// LastCheck is when the agent last checked its rules and proxy.
	LastCheck *time.Time `json:"last_check"`
	// Enforceable is false when the agent cannot apply rules (no
	// CAP_NET_ADMIN, no nftables); Reason says why.
	Enforceable bool   `json:"enforceable"`
	Reason      string `json:"reason,omitempty"`
	// Version is the configuration the agent enforces (0: none).
	Version int64 `json:"version"`
	// ProxyReachable is the last check of the proxy (nil: no proxy).
	ProxyReachable *bool  `json:"proxy_reachable,omitempty"`
	Error          string `json:"error,omitempty"`
	// Counts of decisions since the agent started.
	Allowed uint64 `json:"allowed"`
	Denied  uint64 `json:"denied"`
	// Dropped counts packets the kernel rules dropped (UDP other than DNS,
	// other protocols, blocked egress).
	Dropped uint64 `json:"dropped"`
	// Recent are the newest decisions, newest first.
	Recent []Decision `json:"recent,omitempty"`
}

// MaxRecent bounds Status.Recent.
const MaxRecent = 20

// Decision is one egress decision: where, never what was sent.
type Decision struct {
	Time time.Time `json:"time"`
	// Outcome is allowed (direct), proxied or denied.
	Outcome     string `json:"outcome"`
	Protocol    string `json:"protocol"` // tcp or dns
	Destination string `json:"destination"`
	Name        string `json:"name,omitempty"`
	Via         string `json:"via,omitempty"` // the proxy's host:port
	Reason      string `json:"reason,omitempty"`
}

// Outcomes.
const (
	OutcomeAllowed = "allowed"
	OutcomeProxied = "proxied"
	OutcomeDenied  = "denied"
)

// FieldError is a report field out of bounds.
type FieldError struct{ Field, Rule string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// Bounds of a Status's strings.
const (
	maxReason = 1000
	maxField  = 300
)

// Validate bounds a report: the control plane stores it as sent.
func (s *Status) Validate() error {
	if len(s.Reason) > maxReason {
		return &FieldError{"reason", fmt.Sprintf("at most %d bytes", maxReason)}
	}
	if len(s.Error) > maxReason {
		return &FieldError{"error", fmt.Sprintf("at most %d bytes", maxReason)}
	}
	if s.Version < 0 {
		return &FieldError{"version", "must not be negative"}
	}
	if len(s.Recent) > MaxRecent {
		return &FieldError{"recent", fmt.Sprintf("at most %d decisions", MaxRecent)}
	}
	for i, d := range s.Recent {
		f := fmt.Sprintf("recent[%d]", i)
		switch d.Outcome {
		case OutcomeAllowed, OutcomeProxied, OutcomeDenied:
		default:
			return &FieldError{f + ".outcome", "must be allowed, proxied or denied"}
		}
		switch d.Protocol {
		case "tcp", "dns":
		default:
			return &FieldError{f + ".protocol", "must be tcp or dns"}
		}
		for name, v := range map[string]string{"destination": d.Destination, "name": d.Name, "via": d.Via, "reason": d.Reason} {
			if len(v) > maxField {
				return &FieldError{f + "." + name, fmt.Sprintf("at most %d bytes", maxField)}
			}
		}
	}
	return nil
}
