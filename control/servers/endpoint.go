package servers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"deckhand/control/events"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
	"deckhand/platform/store"
)

// A server with an endpoint is where containers run: a Docker engine (a
// unix socket, or TCP with TLS client certificates) or a Kubernetes
// cluster (a kubeconfig, its context and a namespace). The endpoint is
// sealed under the master key in the record and never answered: an
// admin sees its driver, capacity and drain state only.

// Drivers a server's endpoint may name.
const (
	DriverDocker     = "docker"
	DriverKubernetes = "kubernetes"
)

// sealPurpose binds a sealed endpoint to its use.
const sealPurpose = "servers/endpoint"

// Limits of an endpoint.
const (
	maxPEM        = 64 << 10
	maxKubeconfig = 256 << 10
	MaxCapacity   = 100000
)

// Config is the domain's settings.
type Config struct {
	// Sealer seals endpoints at rest (the master key). Required.
	Sealer *secrets.Sealer
	// LocalName is the server name of the control plane's own engine
	// (--server-name): no server with an endpoint may take it.
	LocalName string
}

// Endpoint is how the control plane reaches a server's engine: what the
// record holds sealed.
type Endpoint struct {
	Driver string `json:"driver"`
	// Docker.
	DockerHost string `json:"docker_host,omitempty"`
	TLSCA      string `json:"tls_ca,omitempty"`
	TLSCert    string `json:"tls_cert,omitempty"`
	TLSKey     string `json:"tls_key,omitempty"`
	// Kubernetes.
	Kubeconfig  string `json:"kubeconfig,omitempty"`
	KubeContext string `json:"kube_context,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// TLSConfig is the client TLS configuration of a tcp:// Docker host
// (nil for a unix socket).
func (e *Endpoint) TLSConfig() (*tls.Config, error) {
	if e.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.X509KeyPair([]byte(e.TLSCert), []byte(e.TLSKey))
	if err != nil {
		return nil, fmt.Errorf("tls_cert and tls_key: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(e.TLSCA)) {
		return nil, fmt.Errorf("tls_ca: no PEM certificate")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// EndpointInput is the body of PUT /api/v1/admin/servers/{id}/endpoint.
type EndpointInput struct {
	ServerRef
	Body EndpointBody
}

// EndpointBody is the endpoint and the server's capacity.
type EndpointBody struct {
	Driver      string `json:"driver" required:"true" doc:"docker or kubernetes"`
	DockerHost  string `json:"docker_host,omitempty" doc:"docker: unix:///absolute/path of the engine's socket, or tcp://host:port (then tls_ca, tls_cert and tls_key are required)"`
	TLSCA       string `json:"tls_ca,omitempty" doc:"docker over tcp: the engine's CA certificate (PEM), at most 64 KiB"`
	TLSCert     string `json:"tls_cert,omitempty" doc:"docker over tcp: the control plane's client certificate (PEM), at most 64 KiB"`
	TLSKey      string `json:"tls_key,omitempty" doc:"docker over tcp: the client certificate's private key (PEM), at most 64 KiB; never answered"`
	Kubeconfig  string `json:"kubeconfig,omitempty" doc:"kubernetes: a kubeconfig document (YAML or JSON), at most 256 KiB; never answered"`
	KubeContext string `json:"kube_context,omitempty" doc:"kubernetes: the kubeconfig's context; absent: its current context"`
	Namespace   string `json:"namespace,omitempty" doc:"kubernetes: the namespace every object goes in (a DNS label)"`
	Capacity    int    `json:"capacity" required:"true" doc:"how many containers the server holds, 1-100000: every container placed on it counts, whatever its status, until it is deleted or moved"`
}

var nsRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate checks every field, naming the first wrong one.
func (in *EndpointBody) Validate() error {
	if in.Capacity < 1 || in.Capacity > MaxCapacity {
		return fault.Invalid("capacity", "must be between 1 and %d, got %d", MaxCapacity, in.Capacity)
	}
	ep := in.endpoint()
	switch in.Driver {
	case DriverDocker:
		for f, v := range map[string]string{"kubeconfig": in.Kubeconfig, "kube_context": in.KubeContext, "namespace": in.Namespace} {
			if v != "" {
				return fault.Invalid(f, "is for the kubernetes driver only")
			}
		}
		u, err := url.Parse(in.DockerHost)
		switch {
		case in.DockerHost == "":
			return fault.Invalid("docker_host", "is required for the docker driver")
		case err != nil:
			return fault.Invalid("docker_host", "must be unix:///path or tcp://host:port")
		case u.Scheme == "unix":
			if u.Host != "" || !path.IsAbs(u.Path) || path.Clean(u.Path) != u.Path {
				return fault.Invalid("docker_host", "a unix socket must be unix:///absolute/path")
			}
			for f, v := range map[string]string{"tls_ca": in.TLSCA, "tls_cert": in.TLSCert, "tls_key": in.TLSKey} {
				if v != "" {
					return fault.Invalid(f, "is for a tcp:// docker_host only")
				}
			}
			return nil
		case u.Scheme == "tcp":
			host, port, err := net.SplitHostPort(u.Host)
			if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 || (u.Path != "" && u.Path != "/") {
				return fault.Invalid("docker_host", "must be tcp://host:port")
			}
		default:
			return fault.Invalid("docker_host", "must be unix:///path or tcp://host:port")
		}
		for _, f := range []struct{ name, v string }{{"tls_ca", in.TLSCA}, {"tls_cert", in.TLSCert}, {"tls_key", in.TLSKey}} {
			if f.v == "" {
				return fault.Invalid(f.name, "is required with a tcp:// docker_host: the engine is reached only with TLS client certificates")
			}
			if len(f.v) > maxPEM {
				return fault.Invalid(f.name, "must be at most %d bytes", maxPEM)
			}
		}
		if _, err := tls.X509KeyPair([]byte(in.TLSCert), []byte(in.TLSKey)); err != nil {
			return fault.Invalid("tls_cert", "tls_cert and tls_key must be a PEM certificate and its private key")
		}
		if _, err := ep.TLSConfig(); err != nil {
			return fault.Invalid("tls_ca", "must hold a PEM certificate")
		}
		return nil
	case DriverKubernetes:
		for f, v := range map[string]string{"docker_host": in.DockerHost, "tls_ca": in.TLSCA, "tls_cert": in.TLSCert, "tls_key": in.TLSKey} {
			if v != "" {
				return fault.Invalid(f, "is for the docker driver only")
			}
		}
		if in.Kubeconfig == "" {
			return fault.Invalid("kubeconfig", "is required for the kubernetes driver")
		}
		if len(in.Kubeconfig) > maxKubeconfig {
			return fault.Invalid("kubeconfig", "must be at most %d bytes", maxKubeconfig)
		}
		cfg, err := clientcmd.Load([]byte(in.Kubeconfig))
		if err != nil {
			return fault.Invalid("kubeconfig", "must be a kubeconfig document")
		}
		ctxName := in.KubeContext
		if ctxName == "" {
			ctxName = cfg.CurrentContext
		}
		if _, ok := cfg.Contexts[ctxName]; !ok || ctxName == "" {
			return fault.Invalid("kube_context", "the kubeconfig has no context %q", ctxName)
		}
		if err := selfContained(cfg, ctxName); err != nil {
			return err
		}
		if !nsRe.MatchString(in.Namespace) {
			return fault.Invalid("namespace", "must be a DNS label (lowercase letters, digits, '-', at most 63)")
		}
		if _, err := ep.RESTConfig(); err != nil {
			return fault.Invalid("kubeconfig", "its context %q does not make a client configuration", ctxName)
		}
		return nil
	}
	return fault.Invalid("driver", "must be docker or kubernetes")
}

func (in *EndpointBody) endpoint() Endpoint {
	return Endpoint{Driver: in.Driver, DockerHost: in.DockerHost, TLSCA: in.TLSCA, TLSCert: in.TLSCert, TLSKey: in.TLSKey,
		Kubeconfig: in.Kubeconfig, KubeContext: in.KubeContext, Namespace: in.Namespace}
}

// SetEndpoint makes a server a runtime endpoint (admin only), or changes
// its endpoint and capacity. The server's name becomes the server_name of
// its containers' URLs, so it must be one DNS label, differ from the
// control plane's own server name and from every other endpoint's.
func (s *Service) SetEndpoint(ctx context.Context, in EndpointInput) (*Server, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.ValidateParams(); err != nil {
		return nil, err
	}
	if err := in.Body.Validate(); err != nil {
		return nil, err
	}
	if s.sealer == nil {
		return nil, fault.Errorf(fault.CodeUnavailable, "this control plane has no master key to seal endpoints with")
	}
	raw, err := json.Marshal(in.Body.endpoint())
	if err != nil {
		return nil, fault.Internal("seal the endpoint", err)
	}
	sealed, err := s.sealer.Seal(sealPurpose, raw)
	if err != nil {
		return nil, fault.Internal("seal the endpoint", err)
	}
	now := s.env.Clock.Now().UTC()
	var out Server
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		r, err := getServer(tx, in.ID)
		if err != nil {
			return err
		}
		if !nsRe.MatchString(r.Name) {
			return &fault.Error{Code: fault.CodeConflict, Field: "name", Details: "name",
				Message: fmt.Sprintf("name: server %s is named %q, which is not one DNS label (lowercase letters, digits, '-', at most 63): its name is the server_name of its containers' URLs", r.ID, r.Name)}
		}
		if r.Name == s.cfg.LocalName {
			return &fault.Error{Code: fault.CodeConflict, Field: "name", Details: "name",
				Message: fmt.Sprintf("name: %q is the control plane's own server name (--server-name)", r.Name)}
		}
		others, err := Runners(tx)
		if err != nil {
			return err
		}
		for _, o := range others {
			if o.ID != r.ID && o.Name == r.Name {
				return &fault.Error{Code: fault.CodeConflict, Field: "name", Details: "name",
					Message: fmt.Sprintf("name: server %s with an endpoint is named %q too", o.ID, r.Name)}
			}
		}
		if r.Driver != "" && r.Driver != in.Body.Driver {
			return &fault.Error{Code: fault.CodeConflict, Field: "driver", Details: "driver",
				Message: fmt.Sprintf("driver: server %s runs containers with %s: a server keeps its driver", r.ID, r.Driver)}
		}
		r.Driver, r.Endpoint, r.Capacity = in.Body.Driver, sealed, in.Body.Capacity
		if err := tx.Put(bucketServers, r.ID, r); err != nil {
			return err
		}
		out = r.view(now, p)
		_, err = s.env.Events.Append(tx, events.Event{EventType: "server.endpoint_set", ResourceType: "server", ResourceID: r.ID,
			ActorID: p.UserID, IP: auth.ClientIP(ctx), Payload: events.Payload(map[string]any{"driver": r.Driver, "capacity": r.Capacity})})
		return err
	})
	if err != nil {
		return nil, fault.Wrap("set the server's endpoint", err)
	}
	return &out, nil
}

// DrainInput is POST /api/v1/admin/servers/{id}/drain and .../undrain.
type DrainInput struct {
	ServerRef
	Body *struct{}
}

// Drain stops new placements on a server (admin only); its containers
// keep running.
func (s *Service) Drain(ctx context.Context, in DrainInput) (*Server, error) {
	return s.setDraining(ctx, in.ServerRef, true)
}

// Undrain lets placement choose the server again (admin only).
func (s *Service) Undrain(ctx context.Context, in DrainInput) (*Server, error) {
	return s.setDraining(ctx, in.ServerRef, false)
}

func (s *Service) setDraining(ctx context.Context, ref ServerRef, draining bool) (*Server, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := ref.ValidateParams(); err != nil {
		return nil, err
	}
	now := s.env.Clock.Now().UTC()
	var out Server
	err = s.env.Store.UpdateContext(ctx, func(tx *store.Tx) error {
		r, err := getServer(tx, ref.ID)
		if err != nil {
			return err
		}
		if r.Driver == "" {
			return fault.Errorf(fault.CodeConflict, "server %s has no endpoint: set one (PUT /api/v1/admin/servers/%s/endpoint) before draining it", r.ID, r.ID)
		}
		changed := r.Draining != draining
		r.Draining = draining
		if err := tx.Put(bucketServers, r.ID, r); err != nil {
			return err
		}
		out = r.view(now, p)
		if !changed {
			return nil
		}
		kind := "server.drained"
		if !draining {
			kind = "server.undrained"
		}
		_, err = s.env.Events.Append(tx, events.Event{EventType: kind, ResourceType: "server", ResourceID: r.ID,
			ActorID: p.UserID, IP: auth.ClientIP(ctx)})
		return err
	})
	if err != nil {
		return nil, fault.Wrap("drain the server", err)
	}
	return &out, nil
}

// getServer is server id (404 when unknown).
func getServer(tx *store.Tx, id string) (*serverRec, error) {
	var r serverRec
	ok, err := tx.Get(bucketServers, id, &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFound("server", id)
	}
	return &r, nil
}

// Runner is a server with an endpoint, as placement and the runtime see
// it: Sealed is its endpoint as stored.
type Runner struct {
	ID          string
	Name        string
	Driver      string
	Sealed      string
	Capacity    int
	Draining    bool
	RenterID    string
	RentedUntil time.Time
}

// RentedBy says whether user rents the server at now.
func (r *Runner) RentedBy(user string, now time.Time) bool {
	return r.RenterID == user && now.Before(r.RentedUntil)
}

// Rented says whether anyone rents the server at now.
func (r *Runner) Rented(now time.Time) bool { return r.RenterID != "" && now.Before(r.RentedUntil) }

// Runners are the servers with an endpoint, ordered by name.
func Runners(tx *store.Tx) ([]Runner, error) {
	recs, _, err := store.All[serverRec](tx, serverTable, store.Query{Sort: []string{"region", "price", "name"}})
	if err != nil {
		return nil, err
	}
	var out []Runner
	for _, r := range recs {
		if r.Driver == "" {
			continue
		}
		out = append(out, Runner{ID: r.ID, Name: r.Name, Driver: r.Driver, Sealed: r.Endpoint, Capacity: r.Capacity,
			Draining: r.Draining, RenterID: r.RenterID, RentedUntil: r.RentedUntil})
	}
	return out, nil
}

// OpenEndpoint opens a runner's sealed endpoint.
func OpenEndpoint(sealer *secrets.Sealer, sealed string) (Endpoint, error) {
	var ep Endpoint
	raw, err := sealer.Open(sealPurpose, sealed)
	if err != nil {
		return ep, fmt.Errorf("open the server's endpoint: %w", err)
	}
	if err := json.Unmarshal(raw, &ep); err != nil {
		return ep, fmt.Errorf("read the server's endpoint: %w", err)
	}
	return ep, nil
}

// RESTConfig is the client configuration of a kubernetes endpoint.
func (e *Endpoint) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.Load([]byte(e.Kubeconfig))
	if err != nil {
		return nil, err
	}
	return clientcmd.NewNonInteractiveClientConfig(*cfg, e.KubeContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}

// selfContained refuses what would make the control plane read its own
// files or run programs for a kubeconfig: credentials must be inline.
func selfContained(cfg *clientcmdapi.Config, ctxName string) error {
	c := cfg.Contexts[ctxName]
	if cl := cfg.Clusters[c.Cluster]; cl == nil {
		return fault.Invalid("kubeconfig", "context %q names no cluster of the document", ctxName)
	} else if cl.CertificateAuthority != "" {
		return fault.Invalid("kubeconfig", "the cluster's certificate-authority must be inline (certificate-authority-data), not a file")
	}
	if u := cfg.AuthInfos[c.AuthInfo]; u != nil {
		switch {
		case u.Exec != nil || u.AuthProvider != nil:
			return fault.Invalid("kubeconfig", "exec and auth-provider credentials are refused: give a token or a client certificate inline")
		case u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "":
			return fault.Invalid("kubeconfig", "credentials must be inline (client-certificate-data, client-key-data, token), not files")
		}
	}
	return nil
}
