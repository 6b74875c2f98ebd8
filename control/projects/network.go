package projects

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
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
	Status       string     `json:"status"`
	IsRunning    bool       `json:"is_running"`
	ConfiguredAt time.Time  `json:"configured_at"`
	LastCheck    *time.Time `json:"last_check,omitempty"`
}

// RemoteStatus is the network layer's state as last checked.
type RemoteStatus struct {
	IsRunning bool       `json:"is_running"`
	LastCheck *time.Time `json:"last_check"`
}

// Network is the container network configuration of interface.md.
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

func (r *networkRec) view(creds, withStatus bool) *Network {
	n := &Network{ContainerID: r.ContainerID, Configured: true, Type: r.Type, Proxy: r.Proxy, CredentialsConfigured: creds,
		Country: r.Country, City: r.City, Region: r.Region, Comment: r.Comment, DNSServers: r.DNSServers,
		Status: r.Status, ConfiguredAt: r.ConfiguredAt}
	if withStatus {
		last := r.LastCheck
		n.LastStatusCheck = &last
		n.RemoteStatus = &RemoteStatus{IsRunning: r.IsRunning, LastCheck: r.LastCheck}
	}
	return n
}

func (s *Service) networkRoutes() []platform.Route {
	tag := []string{"container network"}
	read := s.env.Authz.Policy(CheckContainerRead, "a member (owner or any permission) of the container's project")
	act := s.env.Authz.Policy(CheckContainerAccess, "the owner, an operator or a manager of the container's project")
	agentRead := agentOnly(read)
	errs := " 400 for a malformed container id; 404 for an unknown container; 403 when the caller may not act on it (checked before " +
		"anything about the configuration is read, so others learn nothing of it)."
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/containers/{id}/network", Policy: agentRead, Tags: tag, Summary: "The container's network configuration",
			Description: "404 when no configuration is stored. Credentials are never returned: `credentials_configured` says whether some are stored. " +
				"The container's own agent reads it with its agent token (agt_); another container's agent token gets 403." + errs,
			Response: Network{}, Handler: s.handleGetNetwork},
		{Method: http.MethodPut, Path: "/api/v1/containers/{id}/network", Policy: act, Tags: tag, Summary: "Configure the container's outbound network",
			Description: "`type` is socks5, http, https or block. `proxy` (required unless block: 400 `Proxy URL required for non-block type`) is " +
				"`<type>://[user:pass@]host[:port]` whose scheme equals the type (socks5 also takes socks5h); userinfo credentials are stored apart, " +
				"encrypted under the master key, and never echoed; a proxy without userinfo on the same scheme, host and port keeps the stored " +
				"credentials, another endpoint drops them. `dns_servers`: up to 4 IP addresses, default 1.1.1.1 and 8.8.8.8. " +
				"Answers the configuration with status `configured` (a running network is reset to configured)." + errs,
			Body: NetworkInput{}, Response: Network{}, Handler: s.handlePutNetwork},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/network/start", Policy: act, Tags: tag, Summary: "Start the network layer",
			Description: "From configured, stopped or running: running, `is_running` true. 400 when not configured." + errs,
			Response:    NetworkState{}, Handler: s.handleNetState(true)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/network/stop", Policy: act, Tags: tag, Summary: "Stop the network layer",
			Description: "From configured, running or stopped: stopped, `is_running` false. 400 when not configured." + errs,
			Response:    NetworkState{}, Handler: s.handleNetState(false)},
		{Method: http.MethodDelete, Path: "/api/v1/containers/{id}/network", Policy: act, Tags: tag, Summary: "Remove the network configuration and its credentials",
			Description: "404 when the container or the configuration is missing." + errs, Handler: s.handleDeleteNetwork},
	}
}

// NetworkInput is the body of PUT /api/v1/containers/{id}/network.
type NetworkInput struct {
	Type       string   `json:"type" required:"true" enum:"socks5,http,https,block"`
	Proxy      string   `json:"proxy,omitempty"`
	Country    string   `json:"country,omitempty"`
	City       string   `json:"city,omitempty"`
	Region     string   `json:"region,omitempty"`
	Comment    string   `json:"comment,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`

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
		return platform.Invalid("type", "is required (socks5, http, https or block)")
	default:
		return platform.Invalid("type", "must be socks5, http, https or block")
	}
	if in.Proxy == "" && in.Type != "block" {
		return &platform.Error{Code: platform.CodeInvalid, Field: "proxy", Details: "proxy", Message: "Proxy URL required for non-block type"}
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
			return platform.Invalid(f, "must be at most 200 characters")
		}
	}
	if len(in.DNSServers) > maxDNS {
		return platform.Invalid("dns_servers", "at most %d entries, got %d", maxDNS, len(in.DNSServers))
	}
	for i, d := range in.DNSServers {
		a, err := netip.ParseAddr(d)
		if err != nil || a.Zone() != "" {
			return platform.Invalid("dns_servers["+strconv.Itoa(i)+"]", "must be an IPv4 or IPv6 address, got %q", clipStr(d))
		}
		in.DNSServers[i] = a.String()
	}
	if len(in.DNSServers) == 0 {
		in.DNSServers = append([]string(nil), defaultDNS...)
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
		return "", nil, platform.Invalid("proxy", "%s", rule)
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

// credentials are what bucketNetCreds holds, sealed.
type credentials struct {
	Username string `json:"username"`
	Password string `json:"password,omitempty"`
}

func (s *Service) netForContainer(tx *store.Tx, id string) (*networkRec, error) {
	var r networkRec
	ok, err := tx.Get(bucketNetwork, id, &r)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

// GetNetwork is container id's network configuration (404 when none).
func (s *Service) GetNetwork(ctx context.Context, id string) (*Network, error) {
	var out *Network
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		r, err := s.netForContainer(tx, id)
		if err != nil {
			return err
		}
		if r == nil {
			return platform.NotFound("network configuration of container", id)
		}
		out = r.view(tx.GetRaw(bucketNetCreds, id) != nil, true)
		return nil
	})
	if err != nil {
		return nil, storeErr("read the network configuration", err)
	}
	return out, nil
}

func (s *Service) handleGetNetwork(c fiber.Ctx) error {
	v, err := s.GetNetwork(c.Context(), c.Params("id"))
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Network configuration", v)
}

// PutNetwork stores container id's network configuration.
func (s *Service) PutNetwork(ctx context.Context, id string, in NetworkInput) (*Network, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var sealed string
	if in.user != nil {
		pw, _ := in.user.Password()
		raw, _ := json.Marshal(credentials{Username: in.user.Username(), Password: pw})
		var err error
		if sealed, err = s.sealer.Seal(sealPurpose(id), raw); err != nil {
			return nil, platform.Internal("seal the proxy credentials", err)
		}
	}
	now := s.now()
	var out *Network
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if c, err := getContainer(tx, id); err != nil || c == nil {
			if err == nil {
				err = platform.NotFound("container", id)
			}
			return err
		}
		old, err := s.netForContainer(tx, id)
		if err != nil {
			return err
		}
		r := &networkRec{ContainerID: id, Type: in.Type, Proxy: in.endpoint, Country: in.Country, City: in.City, Region: in.Region,
			Comment: in.Comment, DNSServers: in.DNSServers, Status: netConfigured, ConfiguredAt: now}
		if old != nil {
			r.LastCheck = old.LastCheck
		}
		hasCreds := false
		switch {
		case sealed != "":
			if err := tx.PutRaw(bucketNetCreds, id, []byte(sealed)); err != nil {
				return err
			}
			hasCreds = true
		case old != nil && in.endpoint != "" && old.Proxy == in.endpoint && tx.GetRaw(bucketNetCreds, id) != nil:
			hasCreds = true // same endpoint without userinfo: keep them
		default:
			if err := tx.Delete(bucketNetCreds, id); err != nil {
				return err
			}
		}
		if err := tx.Put(bucketNetwork, id, r); err != nil {
			return err
		}
		out = r.view(hasCreds, false)
		return nil
	})
	if err != nil {
		return nil, storeErr("store the network configuration", err)
	}
	return out, nil
}

func (s *Service) handlePutNetwork(c fiber.Ctx) error {
	var in NetworkInput
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	v, err := s.PutNetwork(c.Context(), c.Params("id"), in)
	if err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Network configured", v)
}

var errNotConfigured = &platform.Error{Code: platform.CodeBadRequest, Message: "the container's network is not configured: PUT a configuration first", Details: "network"}

// SetNetworkRunning starts (run) or stops the network layer.
func (s *Service) SetNetworkRunning(ctx context.Context, id string, run bool) (*NetworkState, error) {
	now := s.now()
	var out NetworkState
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		r, err := s.netForContainer(tx, id)
		if err != nil {
			return err
		}
		if r == nil {
			return errNotConfigured
		}
		r.IsRunning, r.Status = run, netStopped
		if run {
			r.Status = netRunning
		}
		r.LastCheck = &now
		if err := tx.Put(bucketNetwork, id, r); err != nil {
			return err
		}
		out = NetworkState{ContainerID: id, Status: r.Status, IsRunning: run, LastCheck: now}
		return nil
	})
	if err != nil {
		return nil, storeErr("change the network state", err)
	}
	return &out, nil
}

func (s *Service) handleNetState(run bool) fiber.Handler {
	msg := "Network stopped"
	if run {
		msg = "Network started"
	}
	return func(c fiber.Ctx) error {
		v, err := s.SetNetworkRunning(c.Context(), c.Params("id"), run)
		if err != nil {
			return err
		}
		return platform.Respond(c, http.StatusOK, msg, v)
	}
}

// DeleteNetwork removes the configuration and its credentials.
func (s *Service) DeleteNetwork(ctx context.Context, id string) error {
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if tx.GetRaw(bucketNetwork, id) == nil {
			return platform.NotFound("network configuration of container", id)
		}
		if err := tx.Delete(bucketNetCreds, id); err != nil {
			return err
		}
		return tx.Delete(bucketNetwork, id)
	})
	return storeErr("delete the network configuration", err)
}

func (s *Service) handleDeleteNetwork(c fiber.Ctx) error {
	if err := s.DeleteNetwork(c.Context(), c.Params("id")); err != nil {
		return err
	}
	return platform.Respond(c, http.StatusOK, "Network configuration deleted", nil)
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
	plain, err := s.sealer.Open(sealPurpose(id), string(sealed))
	if err != nil {
		return "", "", false, err
	}
	var c credentials
	if err := json.Unmarshal(plain, &c); err != nil {
		return "", "", false, err
	}
	return c.Username, c.Password, true, nil
}
