package server

import (
	"errors"
	"fmt"

	"deckhand/control/console"
	"deckhand/control/domain"
	"deckhand/control/eventlog"
	"deckhand/control/identity"
	"deckhand/control/images"
	"deckhand/control/meta"
	"deckhand/control/notifications"
	"deckhand/control/projects"
	"deckhand/control/servers"
	"deckhand/control/wallet"
	"deckhand/platform/contract"
)

// domains is every control-plane domain, in build order. Adding a domain
// is its package plus one line here: its name, the function that picks
// its config section out of the server's flags (noConfig when it has
// none) and its constructor.
var domains = []entry{
	add("meta", (*Server).metaConfig, meta.New),
	add("identity", (*Server).identityConfig, identity.Open),
	add("wallet", (*Server).walletConfig, wallet.New),
	add("projects", (*Server).projectsConfig, projects.New),
	add("events", (*Server).eventlogConfig, eventlog.New),
	add("notifications", noConfig, notifications.New),
	add("images", noConfig, images.New),
	add("servers", (*Server).serversConfig, servers.New),
	add("console", (*Server).consoleConfig, console.New),
}

// entry is one line of the list.
type entry struct {
	name  string
	build func(s *Server, env domain.Env[domain.NoConfig]) (contract.Service, error)
}

// add makes a list line from a domain's constructor and its config section.
func add[C any, S contract.Service](name string, section func(*Server) (C, error), build func(domain.Env[C]) (S, error)) entry {
	return entry{name: name, build: func(s *Server, env domain.Env[domain.NoConfig]) (contract.Service, error) {
		c, err := section(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		svc, err := build(domain.WithConfig(env, c))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return svc, nil
	}}
}

// noConfig is the config section of a domain without settings.
func noConfig(*Server) (domain.NoConfig, error) { return domain.NoConfig{}, nil }

// WithDomain adds a domain after the built-in ones, built like them
// (tests, later composition).
func WithDomain[S contract.Service](name string, build func(domain.Env[domain.NoConfig]) (S, error)) Option {
	return func(s *Server) { s.extra = append(s.extra, add(name, noConfig, build)) }
}

func (s *Server) metaConfig() (meta.Config, error) {
	return meta.Config{Regions: s.regions, Keys: s.keys}, nil
}

// walletConfig: group commit of transfers on bbolt, where a commit is an
// fsync; on PostgreSQL every transfer is its own transaction, run
// concurrently: transfers lock their account's row, so those of one user
// queue on it and the rest run side by side, on one replica or several
// (batches would lock several accounts at once and deadlock across
// replicas; BENCHMARKS.md, wallet).
func (s *Server) walletConfig() (wallet.Config, error) {
	c := wallet.Config{TransferFeeBPS: s.cfg.TransferFeeBPS}
	if s.cfg.DatabaseURL != "" {
		c.MaxBatch = -1
	}
	return c, nil
}

func (s *Server) projectsConfig() (projects.Config, error) {
	return projects.Config{Sealer: s.sealer, Keys: s.keys, Runtime: s.runtimeConfig()}, nil
}

func (s *Server) serversConfig() (servers.Config, error) {
	return servers.Config{Sealer: s.sealer, LocalName: s.cfg.ServerName}, nil
}

// consoleConfig hands the console the identity domain built before it.
func (s *Server) consoleConfig() (console.Config, error) {
	for _, d := range s.domains {
		if id, ok := d.(console.Identity); ok {
			return console.Config{Identity: id, PublicURL: s.cfg.PublicURL}, nil
		}
	}
	return console.Config{}, errors.New("the console needs the identity domain")
}
