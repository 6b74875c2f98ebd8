package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"deckhand/platform"
	"deckhand/platform/clock"

	"github.com/spf13/pflag"
)

// OAuthProvider is one external identity provider's client settings
// (--oauth-<name>-client-id, -client-secret, -auth-url, -token-url,
// -userinfo-url).
type OAuthProvider struct {
	ClientID     string
	ClientSecret string
	AuthURL      string
	TokenURL     string
	UserinfoURL  string
	// StarCheckURL (codehost only) answers intent=star_check: a GET with
	// the user's provider token, 204 meaning "starred".
	StarCheckURL string
}

// Configured reports whether enough is set to run the provider's flow.
func (p OAuthProvider) Configured() bool {
	return p.ClientID != "" && p.AuthURL != "" && p.TokenURL != ""
}

// Config is every `deckhand-control serve` setting of docs/spec/operations.md. Domains
// read what they need from here; a new flag is a new field plus one line in
// Bind.
type Config struct {
	Listen        string
	Data          string
	DatabaseURL   string
	MasterKeyFile string // default <data>/master.key
	PublicURL     string // default http://<listen> (the bound address)
	MailDir       string // default <data>/mail
	SMTPURL       string
	AdminEmail    string
	AdminPassword string // never logged
	Signups       bool
	// BuiltinImages registers deckhand/base and deckhand/desktop of this
	// version in the image catalog at start (images.Builtin).
	BuiltinImages          bool
	Signing                bool
	TransferFeeBPS         int
	OAuthCodehost          OAuthProvider
	OAuthWebID             OAuthProvider
	AllowedRedirectDomains []string
	TrustProxyHeaders      bool
	RegionsFile            string // default <data>/regions.json when present
	LogLevel               string
	EventRetentionDays     int // 0: keep every event
	HeaderTimeout          time.Duration
	// Containers that run (runtime.go).
	Runtime                 string // docker, kubernetes or none
	DockerHost              string // default $DOCKER_HOST, else the local socket
	Kubeconfig              string // --runtime kubernetes: empty is in-cluster
	KubeContext             string
	KubeNamespace           string
	KubeStorageClass        string
	KubePullPolicy          string
	AgentControlURL         string // default: a listener on the engine's bridge
	MaxContainersPerProject int
	// MaxSnapshotsPerProject caps a project's snapshots (0: no cap).
	MaxSnapshotsPerProject int
	EnrollTimeout          time.Duration
	ContainerDomain        string
	ServerName             string
	// The platform proxy (proxy.go).
	ProxyListen        string // empty: no proxy
	ProxyWakeTimeout   time.Duration
	ProxyTLS           bool
	ProxyTLSCert       string
	ProxyTLSKey        string
	ProxyACMEDirectory string
	ProxyACMEEmail     string
	ProxyACMERoots     string
	ProxyMaxConns      int
	ProxyRatePerSecond int

	// Not flags: what the process hands in.
	Logger *slog.Logger // default: JSON on stderr at LogLevel
	Clock  clock.Clock  // default: system clock
	Stdout io.Writer    // human-readable startup lines; default io.Discard
}

// DefaultConfig is the configuration with every flag at its default.
func DefaultConfig() Config {
	return Config{
		Listen:                  "127.0.0.1:8080",
		Data:                    "./data",
		Signups:                 true,
		BuiltinImages:           true,
		Signing:                 true,
		TransferFeeBPS:          500,
		AllowedRedirectDomains:  []string{"localhost"},
		LogLevel:                "info",
		HeaderTimeout:           platform.DefaultHeaderTimeout,
		Runtime:                 "docker",
		MaxContainersPerProject: 20,
		MaxSnapshotsPerProject:  20,
		EnrollTimeout:           60 * time.Second,
		ContainerDomain:         "localhost",
		ServerName:              "local",
		ProxyWakeTimeout:        30 * time.Second,
		ProxyMaxConns:           256,
	}
}

// Bind registers every serve flag on fs, writing into c (whose current
// values are the defaults shown).
func (c *Config) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "API address")
	fs.StringVar(&c.Data, "data", c.Data, "data directory: embedded store (control.db), signing keys, outgoing mail; with --database-url only local files (mail, default master key)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "postgres://user:pass@host:port/db: use PostgreSQL instead of the embedded store; "+
		"replicas serving one database share all state through it (signing keys included) and --data keeps only local files")
	fs.StringVar(&c.MasterKeyFile, "master-key-file", c.MasterKeyFile,
		"file with the key that encrypts secrets at rest (JWT and lookup keys, TOTP secrets, signing keys); never stored in the database; "+
			"created 0600 at first start (default <data>/master.key)")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "base of links the server makes (default http://<listen>)")
	fs.StringVar(&c.MailDir, "mail-dir", c.MailDir, "directory for outgoing mail as .eml files (default <data>/mail)")
	fs.StringVar(&c.SMTPURL, "smtp-url", c.SMTPURL, "smtp://user:pass@host:port: send mail through this relay instead")
	fs.StringVar(&c.AdminEmail, "admin-email", c.AdminEmail, "at start, create this verified admin user when absent")
	fs.StringVar(&c.AdminPassword, "admin-password", c.AdminPassword, "password of the bootstrap admin (prefer DECKHAND_ADMIN_PASSWORD)")
	fs.BoolVar(&c.Signups, "signups", c.Signups, "allow self-service signup (false answers 403)")
	fs.BoolVar(&c.BuiltinImages, "builtin-images", c.BuiltinImages, "at start, register the images make image builds (deckhand/base:<version>, deckhand/desktop:<version>) "+
		"in the catalog, free, when absent")
	fs.BoolVar(&c.Signing, "signing", c.Signing, "sign every response with ED25519 (false: public-key answers 503 SIGNING_NOT_CONFIGURED)")
	fs.IntVar(&c.TransferFeeBPS, "transfer-fee-bps", c.TransferFeeBPS, "platform fee on transfers to AI credit, in basis points (0-9999)")
	for _, p := range []struct {
		name string
		into *OAuthProvider
	}{{"codehost", &c.OAuthCodehost}, {"webid", &c.OAuthWebID}} {
		fs.StringVar(&p.into.ClientID, "oauth-"+p.name+"-client-id", p.into.ClientID, p.name+" OAuth client id")
		fs.StringVar(&p.into.ClientSecret, "oauth-"+p.name+"-client-secret", p.into.ClientSecret, p.name+" OAuth client secret")
		fs.StringVar(&p.into.AuthURL, "oauth-"+p.name+"-auth-url", p.into.AuthURL, p.name+" OAuth authorize endpoint")
		fs.StringVar(&p.into.TokenURL, "oauth-"+p.name+"-token-url", p.into.TokenURL, p.name+" OAuth token endpoint")
		fs.StringVar(&p.into.UserinfoURL, "oauth-"+p.name+"-userinfo-url", p.into.UserinfoURL, p.name+" OAuth userinfo endpoint")
	}
	fs.StringVar(&c.OAuthCodehost.StarCheckURL, "oauth-codehost-star-url", c.OAuthCodehost.StarCheckURL,
		"codehost URL answering intent=star_check for the signed-in user (204 = starred)")
	fs.StringSliceVar(&c.AllowedRedirectDomains, "allowed-redirect-domains", c.AllowedRedirectDomains, "domains redirect_uri may point to (comma list)")
	fs.BoolVar(&c.TrustProxyHeaders, "trust-proxy-headers", c.TrustProxyHeaders, "take the client IP from X-Forwarded-For (only behind a trusted proxy)")
	fs.StringVar(&c.RegionsFile, "regions-file", c.RegionsFile, "JSON file of region records (default <data>/regions.json when present, else built-in regions)")
	fs.IntVar(&c.EventRetentionDays, "event-retention-days", c.EventRetentionDays,
		"delete events older than this many days in the background, hourly and in batches (1-365; 0 keeps every event)")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout,
		"how long a connection may take to send a request's line and headers before it is closed (100ms-10m)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.Runtime, "runtime", c.Runtime, "what runs containers: docker (the Docker Engine API, or Podman's compatible socket), "+
		"kubernetes (a Pod per container, on the cluster --kubeconfig names) or none (records only: agents are run by hand)")
	fs.StringVar(&c.DockerHost, "docker-host", c.DockerHost, "the engine's address, unix:///path or tcp://host:port (default $DOCKER_HOST, else unix:///var/run/docker.sock)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "--runtime kubernetes: the kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)")
	fs.StringVar(&c.KubeContext, "kube-context", c.KubeContext, "--runtime kubernetes: the kubeconfig context (default: its current one)")
	fs.StringVar(&c.KubeNamespace, "kube-namespace", c.KubeNamespace, "--runtime kubernetes: the namespace holding every container's Pod, workspace claim, Service and Secret (default deckhand)")
	fs.StringVar(&c.KubeStorageClass, "kube-storage-class", c.KubeStorageClass, "--runtime kubernetes: the storage class of workspace claims (default: the cluster's default class)")
	fs.StringVar(&c.KubePullPolicy, "kube-pull-policy", c.KubePullPolicy, "--runtime kubernetes: the Pods' image pull policy, Always, IfNotPresent or Never (default IfNotPresent; with Never an image on no node is refused at create)")
	fs.StringVar(&c.AgentControlURL, "agent-control-url", c.AgentControlURL, "the control-plane URL given to the agents of the containers it runs "+
		"(default: http://<the engine bridge's gateway>:<the --listen port>, where the control plane also listens, so the API stays off other interfaces)")
	fs.IntVar(&c.MaxContainersPerProject, "max-containers-per-project", c.MaxContainersPerProject, "the most containers one project may hold (0: no limit)")
	fs.IntVar(&c.MaxSnapshotsPerProject, "max-snapshots-per-project", c.MaxSnapshotsPerProject, "the most container snapshots one project may hold (0: no limit)")
	fs.DurationVar(&c.EnrollTimeout, "enroll-timeout", c.EnrollTimeout, "how long a new container's agent has to enrol and answer its health check before the container is failed (5s-30m)")
	fs.StringVar(&c.ContainerDomain, "container-domain", c.ContainerDomain, "{container_domain} of the containers' service URLs (and the agents' --domain)")
	fs.StringVar(&c.ServerName, "server-name", c.ServerName, "the server name in the service URLs of containers on this control plane's engine")
	fs.StringVar(&c.ProxyListen, "proxy-listen", c.ProxyListen, "the platform proxy's address: it serves every container's per-service URL and port previews "+
		"(<project>-<container>-<service>-1.<server>.<container-domain>) to that container's agent (empty: no proxy)")
	fs.DurationVar(&c.ProxyWakeTimeout, "proxy-wake-timeout", c.ProxyWakeTimeout, "how long a request to a stopped container with autostart waits for it to start (1s-10m)")
	fs.BoolVar(&c.ProxyTLS, "proxy-tls", c.ProxyTLS, "serve the proxy over TLS: a certificate from --proxy-tls-cert/--proxy-tls-key, or issued on demand by --proxy-acme-directory for existing containers' names")
	fs.StringVar(&c.ProxyTLSCert, "proxy-tls-cert", c.ProxyTLSCert, "PEM certificate (a wildcard for *.<server>.<container-domain>) for --proxy-tls")
	fs.StringVar(&c.ProxyTLSKey, "proxy-tls-key", c.ProxyTLSKey, "PEM key of --proxy-tls-cert")
	fs.StringVar(&c.ProxyACMEDirectory, "proxy-acme-directory", c.ProxyACMEDirectory, "ACME directory URL certificates are issued from on demand (certificates kept under <data>/certmagic)")
	fs.StringVar(&c.ProxyACMEEmail, "proxy-acme-email", c.ProxyACMEEmail, "the ACME account's contact email")
	fs.StringVar(&c.ProxyACMERoots, "proxy-acme-roots", c.ProxyACMERoots, "PEM roots trusted for the ACME server itself (a private CA; default the system's)")
	fs.IntVar(&c.ProxyMaxConns, "proxy-max-conns-per-container", c.ProxyMaxConns, "the most connections the proxy holds open to one container's agent (1-65535)")
	fs.IntVar(&c.ProxyRatePerSecond, "proxy-rate-per-container", c.ProxyRatePerSecond, "the most requests a second the proxy passes to one container (0: no bound); past it 429")
}

// Validate checks the flags and fills derived defaults (MailDir).
// PublicURL is filled once the listener is bound, so :0 works.
func (c *Config) Validate() error {
	if err := validateDatabaseURL(c.DatabaseURL); err != nil {
		return err
	}
	if c.Listen == "" {
		return errors.New("--listen: must not be empty")
	}
	if c.Data == "" {
		return errors.New("--data: must not be empty")
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = platform.DefaultHeaderTimeout
	}
	if c.HeaderTimeout < 100*time.Millisecond || c.HeaderTimeout > 10*time.Minute {
		return fmt.Errorf("--header-timeout: must be between 100ms and 10m, got %s", c.HeaderTimeout)
	}
	if c.TransferFeeBPS < 0 || c.TransferFeeBPS > 9999 {
		return fmt.Errorf("--transfer-fee-bps: must be between 0 and 9999, got %d", c.TransferFeeBPS)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--public-url: must be an http(s) URL, got %q", c.PublicURL)
		}
		c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	}
	if c.SMTPURL != "" {
		u, err := url.Parse(c.SMTPURL)
		if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
			return errors.New("--smtp-url: must be smtp://[user:pass@]host:port") // no echo: it may hold a password
		}
	}
	if c.EventRetentionDays < 0 || c.EventRetentionDays > 365 {
		return fmt.Errorf("--event-retention-days: must be 0 (off) or between 1 and 365, got %d", c.EventRetentionDays)
	}
	if (c.AdminEmail == "") != (c.AdminPassword == "") {
		return errors.New("--admin-email and --admin-password: give both or neither")
	}
	for _, p := range []struct {
		name string
		p    OAuthProvider
	}{{"codehost", c.OAuthCodehost}, {"webid", c.OAuthWebID}} {
		for flag, v := range map[string]string{"auth-url": p.p.AuthURL, "token-url": p.p.TokenURL, "userinfo-url": p.p.UserinfoURL, "star-url": p.p.StarCheckURL} {
			if v == "" {
				continue
			}
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("--oauth-%s-%s: must be an http(s) URL, got %q", p.name, flag, v)
			}
		}
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level: must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if err := c.validateRuntime(); err != nil {
		return err
	}
	if err := c.validateProxy(); err != nil {
		return err
	}
	if c.MailDir == "" {
		c.MailDir = filepath.Join(c.Data, "mail")
	}
	return nil
}
