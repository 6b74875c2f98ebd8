package projects

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/netconf"
	"deckhand/platform/store"
)

// Network states.
const (
	netConfigured = "configured"
	netRunning    = "running"
	netStopped    = "stopped"
)

// sealPurpose binds sealed proxy credentials to their use (and container).
func sealPurpose(containerID string) string { return "projects/network-credentials/" + containerID }

var defaultDNS = []string{"1.1.1.1", "8.8.8.8"}

const maxDNS = 4

// networkRec is the stored configuration; credentials live apart
// (bucketNetCreds), sealed.
type networkRec struct {
	ContainerID  string     `json:"container_id"`
	Type         string     `json:"type"`
	Proxy        string     `json:"proxy,omitempty"`
	Country      string     `json:"country,omitempty"`
	City         string     `json:"city,omitempty"`
	Region       string     `json:"region,omitempty"`
	Comment      string     `json:"comment,omitempty"`
	DNSServers   []string   `json:"dns_servers"`
	Allow        []string   `json:"allow,omitempty"`
	Deny         []string   `json:"deny,omitempty"`
	Status       string     `json:"status"`
	IsRunning    bool       `json:"is_running"`
	ConfiguredAt time.Time  `json:"configured_at"`
	LastCheck    *time.Time `json:"last_check,omitempty"`
	// Version changes with every PUT, start and stop: the agent's ETag.
	Version int64 `json:"version"`
	// Report is the agent's last report of what runs, at ReportedAt.
	Report     *netconf.Status `json:"report,omitempty"`
	ReportedAt *time.Time      `json:"reported_at,omitempty"`
}

// reportStale is how old an agent's report may be before remote_status
// stops believing it (the agent reports every 30 s and on each change).
const reportStale = 2 * time.Minute

// RemoteStatus is the network layer's state as the container's agent
// last reported it: is_running is true only while the agent says its
// rules are in the kernel. The fields past last_check are extensions.
type RemoteStatus struct {
	IsRunning bool       `json:"is_running"`
	LastCheck *time.Time `json:"last_check"`
	// Reported: an agent has reported at all; ReportedAt when last.
	Reported   bool       `json:"reported"`
	ReportedAt *time.Time `json:"reported_at,omitempty"`
	// Enforceable is false when the agent cannot apply rules; Reason says
	// why (no CAP_NET_ADMIN, no nftables).
	Enforceable *bool  `json:"enforceable,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// AppliedVersion is the configuration version the agent enforces;
	// InSync is whether it is the stored one.
	AppliedVersion int64  `json:"applied_version"`
	InSync         bool   `json:"in_sync"`
	ProxyReachable *bool  `json:"proxy_reachable,omitempty"`
	Error          string `json:"error,omitempty"`
	// Counts of egress decisions since the agent started, and packets
	// the rules dropped.
	Allowed uint64 `json:"allowed"`
	Denied  uint64 `json:"denied"`
	Dropped uint64 `json:"dropped"`
	// RecentDecisions are the agent's newest egress decisions, newest
	// first: destination, name, proxy and reason, never a payload.
	RecentDecisions []netconf.Decision `json:"recent_decisions"`
}

// Network is the container network configuration of docs/spec/interface.md.
type Network struct {
	ContainerID           string    `json:"container_id"`
	Configured            bool      `json:"configured"`
	Type                  string    `json:"type"`
	Proxy                 string    `json:"proxy"`
	CredentialsConfigured bool      `json:"credentials_configured"`
	Country               string    `json:"country"`
	City                  string    `json:"city"`
	Region                string    `json:"region"`
	Comment               string    `json:"comment"`
	DNSServers            []string  `json:"dns_servers"`
	Allow                 []string  `json:"allow"`
	Deny                  []string  `json:"deny"`
	Status                string    `json:"status"`
	ConfiguredAt          time.Time `json:"configured_at"`
	// LastStatusCheck is on GET only: null until a start or stop checked
	// the remote side (a nil time behind the pointer), absent elsewhere.
	LastStatusCheck **time.Time   `json:"last_status_check,omitempty" doc:"GET only: when start or stop last checked the network; null until then"`
	RemoteStatus    *RemoteStatus `json:"remote_status,omitempty"`
}

// NetworkState is the answer of start and stop.
type NetworkState struct {
	ContainerID string    `json:"container_id"`
	Status      string    `json:"status"`
	IsRunning   bool      `json:"is_running"`
	LastCheck   time.Time `json:"last_check"`
}

func (r *networkRec) view(creds, withStatus bool, now time.Time) *Network {
	n := &Network{ContainerID: r.ContainerID, Configured: true, Type: r.Type, Proxy: r.Proxy, CredentialsConfigured: creds,
		Country: r.Country, City: r.City, Region: r.Region, Comment: r.Comment, DNSServers: r.DNSServers,
		Allow: nonNil(r.Allow), Deny: nonNil(r.Deny), Status: r.Status, ConfiguredAt: r.ConfiguredAt}
	if withStatus {
		last := r.LastCheck
		if r.ReportedAt != nil && (last == nil || r.ReportedAt.After(*last)) {
			last = r.ReportedAt
		}
		n.LastStatusCheck = &last
		n.RemoteStatus = r.remote(now)
	}
	return n
}

// remote is what the agent last reported; a report older than
// reportStale says nothing runs any more.
func (r *networkRec) remote(now time.Time) *RemoteStatus {
	rs := &RemoteStatus{RecentDecisions: []netconf.Decision{}}
	if r.Report == nil {
		return rs
	}
	rep := r.Report
	en := rep.Enforceable
	*rs = RemoteStatus{IsRunning: rep.IsRunning, LastCheck: rep.LastCheck, Reported: true, ReportedAt: r.ReportedAt,
		Enforceable: &en, Reason: rep.Reason, AppliedVersion: rep.Version, InSync: rep.Version == r.Version,
		ProxyReachable: rep.ProxyReachable, Error: rep.Error, Allowed: rep.Allowed, Denied: rep.Denied, Dropped: rep.Dropped,
		RecentDecisions: nonNil(rep.Recent)}
	if r.ReportedAt != nil && now.Sub(*r.ReportedAt) > reportStale {
		rs.IsRunning = false
		rs.Error = "no report from the container's agent since " + r.ReportedAt.UTC().Format(time.RFC3339)
	}
	return rs
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// NetworkEffectivePath is the route the agent polls.
const NetworkEffectivePath = "/api/v1/containers/{id}/network/effective"

// NetworkInput is the body of PUT /api/v1/containers/{id}/network.
type NetworkInput struct {
	Type       string   `json:"type" required:"true" enum:"socks5,http,https,block"`
	Proxy      string   `json:"proxy,omitempty"`
	Country    string   `json:"country,omitempty"`
	City       string   `json:"city,omitempty"`
	Region     string   `json:"region,omitempty"`
	Comment    string   `json:"comment,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`
	// Allow and Deny are domains (`example.com`, `*.example.com`), IP
	// addresses or CIDRs (extension; see the route).
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`

	// Filled by Validate.
	endpoint string
	user     *url.Userinfo
}

// Validate checks the body and splits the proxy URL into endpoint and
// credentials.
func (in *NetworkInput) Validate() error {
	switch in.Type {
	case "socks5", "http", "https", "block":
	case "":
		return fault.Invalid("type", "is required (socks5, http, https or block)")
	default:
		return fault.Invalid("type", "must be socks5, http, https or block")
	}
	if in.Proxy == "" && in.Type != "block" {
		return &fault.Error{Code: fault.CodeInvalid, Field: "proxy", Details: "proxy", Message: "Proxy URL required for non-block type"}
	}
	if in.Proxy != "" {
		ep, user, err := splitProxy(in.Type, in.Proxy)
		if err != nil {
			return err
		}
		in.endpoint, in.user = ep, user
	}
	for f, v := range map[string]string{"country": in.Country, "city": in.City, "region": in.Region, "comment": in.Comment} {
		if !utf8.ValidString(v) || utf8.RuneCountInString(v) > 200 {
			return fault.Invalid(f, "must be at most 200 characters")
		}
	}
	if len(in.DNSServers) > maxDNS {
		return fault.Invalid("dns_servers", "at most %d entries, got %d", maxDNS, len(in.DNSServers))
	}
	for i, d := range in.DNSServers {
		a, err := netip.ParseAddr(d)
		if err != nil || a.Zone() != "" {
			return fault.Invalid("dns_servers["+strconv.Itoa(i)+"]", "must be an IPv4 or IPv6 address, got %q", clipStr(d))
		}
		in.DNSServers[i] = a.String()
	}
	if len(in.DNSServers) == 0 {
		in.DNSServers = append([]string(nil), defaultDNS...)
	}
	if _, err := netconf.CompileLists(in.Allow, in.Deny); err != nil {
		var le *netconf.ListError
		if errors.As(err, &le) {
			return fault.Invalid(le.Field, "%s", le.Rule)
		}
		return fault.Invalid("allow", "%s", err.Error())
	}
	for i := range in.Allow {
		in.Allow[i] = strings.TrimSpace(in.Allow[i])
	}
	for i := range in.Deny {
		in.Deny[i] = strings.TrimSpace(in.Deny[i])
	}
	return nil
}

func clipStr(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// splitProxy parses a proxy URL into its endpoint (scheme://host:port,
// what is stored and shown) and userinfo. Messages never echo the URL: it
// may hold a password.
func splitProxy(typ, raw string) (string, *url.Userinfo, error) {
	bad := func(rule string) (string, *url.Userinfo, error) {
		return "", nil, fault.Invalid("proxy", "%s", rule)
	}
	if len(raw) > 2048 {
		return bad("must be at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return bad("must be a URL <scheme>://[user:pass@]host[:port]")
	}
	scheme := strings.ToLower(u.Scheme)
	if typ == "block" && scheme != "" {
		typ = scheme // a block profile may keep a proxy of any kind
	}
	if scheme != typ && !(typ == "socks5" && scheme == "socks5h") {
		return bad("scheme must be " + typ + ":// for type " + typ)
	}
	if typ != "socks5" && typ != "http" && typ != "https" {
		return bad("scheme must be socks5, http or https")
	}
	host := u.Hostname()
	if host == "" {
		return bad("must name a host")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return bad("must have no path, query or fragment")
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad("port must be 1-65535")
		}
	}
	ep := scheme + "://" + strings.ToLower(u.Host)
	var user *url.Userinfo
	if u.User != nil && u.User.String() != "" {
		user = u.User
	}
	return ep, user, nil
}

// netOf is container id's network configuration, 404 when none is
// stored.
func netOf(tx *store.Tx, id string) (*networkRec, error) {
	r, err := get[networkRec](tx, bucketNetwork, id)
	if err == nil && r == nil {
		err = fault.NotFound("network configuration of container", id)
	}
	return r, err
}

// credentials are what bucketNetCreds holds, sealed.
type credentials struct {
	Username string `json:"username"`
	Password string `json:"password,omitempty"`
}

// GetNetwork is container id's network configuration (404 when none).
func (s *Service) GetNetwork(ctx context.Context, ref ContainerRef) (*Network, error) {
	id := ref.ID
	return domain.Transact(ctx, s.db.ViewContext, "read the network configuration", func(tx *store.Tx) (*Network, error) {
		r, err := netOf(tx, id)
		if err != nil {
			return nil, err
		}
		return r.view(tx.GetRaw(bucketNetCreds, id) != nil, true, s.now()), nil
	})
}

// NetworkPut is PUT /api/v1/containers/{id}/network.
type NetworkPut struct {
	ContainerRef
	Body NetworkInput
}

// PutNetwork stores container id's network configuration.
func (s *Service) PutNetwork(ctx context.Context, req NetworkPut) (*Network, error) {
	id, in := req.ID, req.Body
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var sealed string
	if in.user != nil {
		pw, _ := in.user.Password()
		raw, _ := json.Marshal(credentials{Username: in.user.Username(), Password: pw})
		var err error
		if sealed, err = s.sealer.Seal(sealPurpose(id), raw); err != nil {
			return nil, fault.Internal("seal the proxy credentials", err)
		}
	}
	now := s.now()
	return domain.Transact(ctx, s.db.UpdateContext, "store the network configuration", func(tx *store.Tx) (*Network, error) {
		if _, err := findContainer(tx, id); err != nil {
			return nil, err
		}
		old, err := get[networkRec](tx, bucketNetwork, id)
		if err != nil {
			return nil, err
		}
		r := &networkRec{ContainerID: id, Type: in.Type, Proxy: in.endpoint, Country: in.Country, City: in.City, Region: in.Region,
			Comment: in.Comment, DNSServers: in.DNSServers, Allow: in.Allow, Deny: in.Deny, Status: netConfigured, ConfiguredAt: now, Version: 1}
		if old != nil {
			r.LastCheck, r.Version, r.Report, r.ReportedAt = old.LastCheck, old.Version+1, old.Report, old.ReportedAt
		} else {
			// A re-created configuration continues the count of a deleted
			// one: the agent refuses a version lower than one it saw.
			var last int64
			if _, err := tx.Get(bucketNetVersion, id, &last); err != nil {
				return nil, err
			}
			r.Version = last + 1
		}
		hasCreds := false
		switch {
		case sealed != "":
			if err := tx.PutRaw(bucketNetCreds, id, []byte(sealed)); err != nil {
				return nil, err
			}
			hasCreds = true
		case old != nil && in.endpoint != "" && old.Proxy == in.endpoint && tx.GetRaw(bucketNetCreds, id) != nil:
			hasCreds = true // same endpoint without userinfo: keep them
		default:
			if err := tx.Delete(bucketNetCreds, id); err != nil {
				return nil, err
			}
		}
		return r.view(hasCreds, false, now), tx.Put(bucketNetwork, id, r)
	})
}

var errNotConfigured = &fault.Error{Code: fault.CodeBadRequest, Message: "the container's network is not configured: PUT a configuration first", Details: "network"}

// StartNetwork starts the network layer.
func (s *Service) StartNetwork(ctx context.Context, ref ContainerRef) (*NetworkState, error) {
	return s.SetNetworkRunning(ctx, ref.ID, true)
}

// StopNetwork stops the network layer.
func (s *Service) StopNetwork(ctx context.Context, ref ContainerRef) (*NetworkState, error) {
	return s.SetNetworkRunning(ctx, ref.ID, false)
}

// SetNetworkRunning starts (run) or stops the network layer.
func (s *Service) SetNetworkRunning(ctx context.Context, id string, run bool) (*NetworkState, error) {
	now := s.now()
	return domain.Transact(ctx, s.db.UpdateContext, "change the network state", func(tx *store.Tx) (*NetworkState, error) {
		r, err := get[networkRec](tx, bucketNetwork, id)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, errNotConfigured
		}
		r.IsRunning, r.Status = run, netStopped
		if run {
			r.Status = netRunning
		}
		r.LastCheck = &now
		r.Version++
		return &NetworkState{ContainerID: id, Status: r.Status, IsRunning: run, LastCheck: now}, tx.Put(bucketNetwork, id, r)
	})
}

// DeleteNetwork removes the configuration and its credentials.
func (s *Service) DeleteNetwork(ctx context.Context, ref ContainerRef) error {
	id := ref.ID
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		r, err := netOf(tx, id)
		if err != nil {
			return err
		}
		if err := tx.Put(bucketNetVersion, id, r.Version); err != nil {
			return err
		}
		if err := tx.Delete(bucketNetCreds, id); err != nil {
			return err
		}
		return tx.Delete(bucketNetwork, id)
	})
	return fault.Wrap("delete the network configuration", err)
}

// ProxyCredentials opens container id's stored proxy credentials (for the
// component that runs the network layer); ok is false when none are stored.
func (s *Service) ProxyCredentials(ctx context.Context, id string) (username, password string, ok bool, err error) {
	var sealed []byte
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		sealed = append([]byte(nil), tx.GetRaw(bucketNetCreds, id)...)
		return nil
	})
	if err != nil || len(sealed) == 0 {
		return "", "", false, err
	}
	c, err := s.openCredentials(id, sealed)
	if err != nil {
		return "", "", false, err
	}
	return c.Username, c.Password, true, nil
}

// openCredentials opens container id's sealed proxy credentials.
func (s *Service) openCredentials(id string, sealed []byte) (credentials, error) {
	var c credentials
	plain, err := s.sealer.Open(sealPurpose(id), string(sealed))
	if err != nil {
		return c, fault.Internal("open the proxy credentials", err)
	}
	if err := json.Unmarshal(plain, &c); err != nil {
		return c, fault.Internal("read the proxy credentials", err)
	}
	return c, nil
}

// agentPolicy admits only the container's own agent token (agt_) to the
// routes the agent polls and reports to: the effective configuration
// carries the proxy's credentials in clear.
func (s *Service) agentPolicy() platform.Policy {
	return agentOnly(s.env.Authz.Policy(CheckContainerAgent, "the container's own agent token (agt_) only: people and svc_ tokens get 403, "+
		"another container's agent token 403"))
}

// EffectiveNetwork is what container id's agent enforces, with the
// proxy credentials opened; 404 when nothing is configured.
func (s *Service) EffectiveNetwork(ctx context.Context, id string) (*netconf.Document, error) {
	var sealed []byte
	rec, err := domain.Transact(ctx, s.db.ViewContext, "read the network configuration", func(tx *store.Tx) (*networkRec, error) {
		sealed = append([]byte(nil), tx.GetRaw(bucketNetCreds, id)...)
		return netOf(tx, id)
	})
	if err != nil {
		return nil, err
	}
	d := &netconf.Document{Container: id, Type: rec.Type, Proxy: rec.Proxy, DNSServers: rec.DNSServers, Running: rec.Status == netRunning,
		Allow: rec.Allow, Deny: rec.Deny, Version: rec.Version, ConfiguredAt: rec.ConfiguredAt}
	if len(sealed) > 0 && rec.Proxy != "" {
		c, err := s.openCredentials(id, sealed)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(rec.Proxy)
		if err != nil {
			return nil, fault.Internal("read the stored proxy endpoint", err)
		}
		if c.Password != "" {
			u.User = url.UserPassword(c.Username, c.Password)
		} else {
			u.User = url.User(c.Username)
		}
		d.Proxy = u.String()
	}
	return d, nil
}

// Poll is an agent's conditional read of what it enforces.
type Poll struct {
	ContainerRef
	IfNoneMatch string `header:"If-None-Match" doc:"the ETag the agent holds; 304 when it is still current"`
}

// polled answers body with the ETag header of tag, or 304 without it when
// the agent of p holds tag (with or without its quotes).
func polled[T any](p Poll, tag string, body *T) (etag string, status int, _ *T) {
	if strings.Trim(strings.TrimSpace(p.IfNoneMatch), `"`) == tag {
		return `"` + tag + `"`, http.StatusNotModified, nil
	}
	return `"` + tag + `"`, 0, body
}

// EffectiveNetworkAnswer is the effective configuration with its ETag; 304
// without a body when the agent holds it.
type EffectiveNetworkAnswer struct {
	ETag   string `header:"ETag" doc:"network:v<version>, quoted"`
	Status int
	Body   *netconf.Document
}

// PollNetwork is EffectiveNetwork for the agent's poll.
func (s *Service) PollNetwork(ctx context.Context, in Poll) (*EffectiveNetworkAnswer, error) {
	d, err := s.EffectiveNetwork(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := &EffectiveNetworkAnswer{}
	out.ETag, out.Status, out.Body = polled(in, "network:v"+strconv.FormatInt(d.Version, 10), d)
	return out, nil
}

// NetworkReport is the body of POST .../network/remote-status.
type NetworkReport struct {
	netconf.Status
}

// Validate bounds what an agent may store.
func (in *NetworkReport) Validate() error {
	if err := in.Status.Validate(); err != nil {
		var fe *netconf.FieldError
		if errors.As(err, &fe) {
			return fault.Invalid(fe.Field, "%s", fe.Rule)
		}
		return fault.Invalid("status", "%s", err.Error())
	}
	return nil
}

// NetworkReportInput is POST .../network/remote-status.
type NetworkReportInput struct {
	ContainerRef
	Body NetworkReport
}

// ReportNetwork stores the agent's report of what runs.
func (s *Service) ReportNetwork(ctx context.Context, req NetworkReportInput) error {
	id, in := req.ID, req.Body
	if err := in.Validate(); err != nil {
		return err
	}
	now := s.now()
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		r, err := netOf(tx, id)
		if err != nil {
			return err
		}
		rep := in.Status
		r.Report, r.ReportedAt = &rep, &now
		return tx.Put(bucketNetwork, id, r)
	})
	return fault.Wrap("store the network report", err)
}
