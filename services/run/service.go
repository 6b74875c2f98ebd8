// Package run owns run profiles and run sources. Profiles are named command
// environments (shell, env, cwd, PATH additions), one of them active; a
// profile carries a version and a PATCH with If-Match checks it. Sources
// are package sources (git repositories, tar.gz/zip archives over http(s))
// synced into the workspace directory with the real `git` and a confined
// archive extractor; each keeps diagnostics of its last sync.
package run

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"deckhand/platform"
	"deckhand/platform/contract"
	"deckhand/platform/fault"
	"deckhand/platform/secrets"
)

// Settings are the run service's flags.
type Settings struct {
	// Workspace is where sources are synced; empty: <data>/run/workspace.
	Workspace string
	// SyncTimeout bounds one source's sync.
	SyncTimeout time.Duration
	// MaxArchive bounds an archive download and its extracted size, bytes.
	MaxArchive int64
	// AllowHosts are host names, addresses and CIDR ranges a source may
	// reach although they are loopback, link-local or this machine's.
	AllowHosts []string
}

// Flags declares --run-workspace, --run-sync-timeout, --run-max-archive and
// --run-allow-hosts.
func (s *Settings) Flags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Workspace, "run-workspace", "", "directory run sources are synced into (default <data>/run/workspace)")
	fs.DurationVar(&s.SyncTimeout, "run-sync-timeout", 10*time.Minute, "longest one source sync may take")
	fs.Int64Var(&s.MaxArchive, "run-max-archive", 1<<30, "largest archive download and extracted size of a run source, bytes")
	fs.StringSliceVar(&s.AllowHosts, "run-allow-hosts", nil, "comma list of host names, IP addresses or CIDR ranges run sources may reach "+
		"although they are loopback, link-local or this machine's own addresses (refused by default)")
}

// Validate checks the flags.
func (s *Settings) Validate() error {
	if s.Workspace != "" && !filepath.IsAbs(s.Workspace) {
		return fault.Invalid("--run-workspace", "must be an absolute path, got %q", s.Workspace)
	}
	if s.SyncTimeout < 0 {
		return fault.Invalid("--run-sync-timeout", "must not be negative")
	}
	if s.MaxArchive < 0 {
		return fault.Invalid("--run-max-archive", "must not be negative")
	}
	_, err := newEgress(s.AllowHosts)
	return err
}

// Service is the run service.
type Service struct {
	deps      contract.ServiceDeps
	log       *slog.Logger
	workspace string
	timeout   time.Duration
	maxBytes  int64

	sealer *secrets.Sealer
	egress *egress
	client *http.Client // archive downloads, through egress

	mu      sync.Mutex // guards syncing
	syncing map[string]bool
}

// New builds the service.
func New(deps contract.ServiceDeps, set *Settings) (*Service, error) {
	deps, set, err := contract.PrepareService("run", deps, set)
	if err != nil {
		return nil, err
	}
	ws := cmp.Or(set.Workspace, filepath.Join(deps.DataDir, "workspace"))
	timeout := cmp.Or(set.SyncTimeout, 10*time.Minute)
	maxBytes := cmp.Or(set.MaxArchive, 1<<30)
	key, _, err := secrets.LoadOrCreate(filepath.Join(deps.DataDir, "secrets.key"))
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	eg, err := newEgress(set.AllowHosts)
	if err != nil {
		return nil, err
	}
	if err := deps.Store.Declare(context.Background(), profileTable, sourceTable); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return &Service{deps: deps, log: deps.Logger, workspace: ws, timeout: timeout, maxBytes: maxBytes, sealer: sealer,
		egress: eg, client: eg.httpClient(), syncing: map[string]bool{}}, nil
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "run",
		Title:   "deckhand run profiles and sources",
		Version: platform.Version,
		Description: "Run profiles are named command environments: shell (absolute path), env (variables added to the " +
			"agent's), cwd (absolute), path (directories put before $PATH) and a description. One profile is active at a " +
			"time (POST .../profiles/{profile}/select); the first profile created becomes active, deleting the active one " +
			"leaves none active. Every profile and source has a version that grows by one on each change; PATCH with " +
			"If-Match: <version> answers 409 CONFLICT when it is stale (without If-Match the change applies). " +
			"Run sources are package sources synced into the workspace directory (--run-workspace, default " +
			"<data>/run/workspace), each in its own dir (relative, default its name). type git syncs with the real git: " +
			"init, fetch of ref (default the remote HEAD) and reset --hard to what was fetched, so local edits are " +
			"discarded; ext:: transports are refused and git never prompts. type archive downloads an http(s) URL " +
			"(tar.gz, tar or zip, told by content) up to --run-max-archive bytes and extracts it through an os.Root, so " +
			"no entry lands outside the source's dir (absolute names and .. are refused, links are skipped); a good " +
			"extraction replaces the dir as a whole, a failed one leaves the previous content. A sync runs to its end " +
			"or --run-sync-timeout; a second sync of the same source meanwhile is 409. Diagnostics keep the last " +
			"attempt: state, error, start, duration and per-step timings. A password in a source's URL is used " +
			"for the sync but answered as xxxxx everywhere (responses, diagnostics, errors, journal), and sealed at rest " +
			"(AES-GCM under <data>/run/secrets.key, 0600). A source never reaches loopback, unspecified or link-local addresses " +
			"or an address of this machine (the agent's own ports and every local service): a URL naming one is 400 INVALID " +
			"naming url, and a host name is judged by what it resolves to when the sync connects (archives: every " +
			"connection, redirects included; git: one resolution git is held to, http redirects not followed), so the " +
			"sync fails with that reason; --run-allow-hosts lists host names, addresses or CIDR ranges allowed nonetheless. " +
			"Bad bodies are 400 INVALID naming the field; " +
			"unknown profiles and sources 404. Errors are {\"code\",\"details\",\"message\"}.",
	}
}
