package contract

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/clock"
	"deckhand/platform/proc"
	"deckhand/platform/reqpolicy"
	"deckhand/platform/store"
)

// ServiceDeps is what the agent hands every container service's New. A
// service is built the same way whether the agent runs it in-process or as
// an isolated child (`deckhand service NAME`): the same data directory, the
// same store file, the same settings.
type ServiceDeps struct {
	Name string
	// DataDir is this service's own directory, <data>/<name>, created.
	DataDir string
	// Store is this service's own bbolt file, <data>/<name>/store.db: no
	// other service can reach its buckets, and it is the same file in-process
	// and isolated (bbolt files take one process, so the service's runner
	// opens it, never two at once).
	Store *store.DB
	// Logger carries the service's name as "service" (the agent's runners
	// set it so; WithDefaults does for a nil one), so every line of the
	// service and of its host names it once.
	Logger *slog.Logger
	Clock  clock.Clock
	// Journal takes the service's structured entries (programs' output,
	// actions worth keeping); Notifier takes events a person should see.
	// Both are never nil when the agent builds a service.
	Journal  Journal
	Notifier Notifier
	// Common are the settings every service shares (origins, proxy headers).
	Common CommonSettings
	// Peers, set by the agent for a service it runs in its own process,
	// are the hosts of the other services this process serves right now:
	// the MCP service calls those services' tools through them in memory
	// (platform.Host.CallTool). Nil: none.
	Peers *Peers
	// Offsets are the port offsets of the agent's registry by service
	// name: a service that calls another on its port (the mcp service's
	// tools, for a service in a child process) adds one to the agent's
	// port base.
	Offsets map[string]int
}

// WithDefaults is d with what a test or a stand-alone caller left out
// filled in: the default logger, the system clock, and a journal and
// notifier that write to the logger. The agent always sets all four.
func (d ServiceDeps) WithDefaults() ServiceDeps {
	if d.Logger == nil {
		d.Logger = slog.Default().With("service", d.Name)
	}
	if d.Clock == nil {
		d.Clock = clock.SystemClock{}
	}
	if d.Journal == nil {
		d.Journal = LogJournal{Logger: d.Logger}
	}
	if d.Notifier == nil {
		d.Notifier = LogNotifier{Logger: d.Logger}
	}
	return d
}

// PrepareService is the common start of a service's New that keeps its
// data in its store: nil settings become zero ones and are validated, a
// data directory and a store are required (named after the service, as in
// "exec: no data directory or store"), and deps get WithDefaults.
func PrepareService[S any, P interface {
	*S
	Validate() error
}](name string, deps ServiceDeps, set P) (ServiceDeps, P, error) {
	if set == nil {
		set = new(S)
	}
	if err := set.Validate(); err != nil {
		return deps, nil, err
	}
	if deps.DataDir == "" || deps.Store == nil {
		return deps, nil, fmt.Errorf("%s: no data directory or store", name)
	}
	return deps.WithDefaults(), set, nil
}

// Settings is a service's typed configuration. Flags declares the service's
// own flags on fs, bound to the struct's fields, with their defaults; the
// agent declares every service's flags on `deckhand run` and `deckhand
// service NAME`, each backed by its DECKHAND_<FLAG> variable (platform/config).
// Flag names carry the service's name (--files-root, --cron-runner) so two
// services never claim the same flag. A Settings that also implements
// Validator is checked before any service starts.
type Settings interface {
	Flags(fs *pflag.FlagSet)
}

// NoSettings is the Settings of a service without flags of its own.
type NoSettings struct{}

// Flags declares nothing.
func (*NoSettings) Flags(*pflag.FlagSet) {}

// CommonSettings are the flags every service reads. They configure the
// request policy every container service's host applies (NewServiceHost
// builds it from them) and the client address the host reports.
type CommonSettings struct {
	// Domain is {container_domain}: names under it are served, and browser
	// origins under it may call services. "" means the default, localhost.
	Domain string
	// AllowedOrigins is a comma list of further browser origins
	// (scheme://host[:port]) that may call services.
	AllowedOrigins string
	// TrustProxyHeaders takes the client address from X-Forwarded-For
	// (right-most entry, from a loopback or private peer only).
	TrustProxyHeaders bool
	// TrustedUIDs is a comma list of local users treated as loopback (the
	// agent's own) besides root and the agent's user (LocalTrust).
	TrustedUIDs string
	// RunAs is the user (name or uid) that commands, terminals, exec
	// schedules and daemon programs run as when a request names none; ""
	// is the agent's own user. A container's agent keeps root (egress
	// needs it) while what its users start does not.
	RunAs string
}

// Flags declares --domain, --allowed-origins and --trust-proxy-headers.
func (c *CommonSettings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Domain, "domain", "localhost", "{container_domain}: the gateway's Host routing; names under it are served and are allowed browser origins")
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", "", "comma list of browser origins (https://app.example.com) that may call services besides each one's own and those under --domain")
	fs.BoolVar(&c.TrustProxyHeaders, "trust-proxy-headers", false, "take the client address from X-Forwarded-For (only behind the platform proxy)")
	fs.StringVar(&c.TrustedUIDs, "trusted-uids", "", "comma list of local uids whose connections count as loopback besides root and the agent's own; every other local user needs a credential, as an outside client does")
	fs.StringVar(&c.RunAs, "run-as", "", "user (name or uid) that processes, terminals, exec schedules and daemon programs run as when a request names none (another user needs the agent to run as root); default the agent's own user")
}

// User is the user a command runs as: the one its request names, else
// --run-as ("" for both: the agent's own user).
func (c CommonSettings) User(requested string) string {
	if requested != "" {
		return requested
	}
	return c.RunAs
}

// LocalTrust is the trust these settings give local users: root, the
// agent's own user and --trusted-uids.
func (c CommonSettings) LocalTrust() (*reqpolicy.LocalTrust, error) {
	uids, err := reqpolicy.ParseUIDs(c.TrustedUIDs)
	if err != nil {
		return nil, err
	}
	return reqpolicy.NewLocalTrust(uids), nil
}

// Policy is the request policy these settings describe: --domain (default
// localhost) and --allowed-origins. It fails on an entry of
// --allowed-origins that is not an origin.
func (c CommonSettings) Policy() (*reqpolicy.RequestPolicy, error) {
	return reqpolicy.NewRequestPolicy(cmp.Or(c.Domain, "localhost"), strings.Split(c.AllowedOrigins, ","))
}

// Validate checks --allowed-origins, --trusted-uids and --run-as (the
// user exists, and the agent may switch to it) before anything starts.
func (c CommonSettings) Validate() error {
	if _, err := c.Policy(); err != nil {
		return err
	}
	if _, err := c.LocalTrust(); err != nil {
		return err
	}
	if c.RunAs != "" {
		if _, _, err := proc.Credential(c.RunAs); err != nil {
			return fmt.Errorf("--run-as: %w", err)
		}
	}
	return nil
}

// Service is what every container service and control-plane domain exposes.
type Service interface {
	Routes() []platform.Route
}

// ContainerService is a container service: its route table and the title
// block of its OpenAPI document (the same in-process and as a child).
type ContainerService interface {
	Service
	Info() platform.Info
}

// Closer is implemented by services that hold processes, sessions or files
// and must release them when the agent stops.
type Closer interface {
	Close() error
}

// BodyStreamer is implemented by services that take request bodies larger
// than memory should hold (file uploads): their host streams any body past
// the 4 MiB buffering threshold to the handler (c.Request().BodyStream())
// instead of refusing it, and allows ReadTimeout for reading a whole request.
// The service enforces its own size limit.
type BodyStreamer interface {
	StreamsBodies() (readTimeout time.Duration)
}

// HealthReporter is implemented by services that can be up but unable to do
// their work (the display service without an X display): the host's /health
// then reports that status ("unavailable") and why.
type HealthReporter interface {
	HealthStatus() (status, detail string)
}
