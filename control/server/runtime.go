package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"deckhand/control/agentservices"
	"deckhand/control/fleet"
	"deckhand/control/projects"
	"deckhand/control/runtime"
	"deckhand/control/runtime/docker"
	"deckhand/control/runtime/kubernetes"
	"deckhand/platform/store"
)

// Containers that run: --runtime picks the engine, which the projects
// domain drives through the runtime seam. The engine's objects carry this
// control plane's installation id (made once, kept in the store), so two
// control planes on one engine never touch each other's.
//
// The agents reach the control plane at --agent-control-url; by default
// the control plane also listens on the engine bridge's gateway address
// (the host's side of the installation's network) at the --listen port,
// so containers reach it and the API stays off every other interface.

var (
	labelRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	// Buckets of the server itself.
	bucketServer = "server_meta"
)

const installationKey = "installation_id"

func (c *Config) validateRuntime() error {
	switch c.Runtime {
	case "docker", projects.RuntimeNone:
	case "kubernetes":
		// Pods reach the control plane through the cluster's network, which
		// only the operator knows.
		if c.AgentControlURL == "" {
			return errors.New("--runtime kubernetes needs --agent-control-url: the URL the Pods reach the control plane at (its Service, or an address on the node network)")
		}
		switch c.KubePullPolicy {
		case "", "Always", "IfNotPresent", "Never":
		default:
			return fmt.Errorf("--kube-pull-policy: must be Always, IfNotPresent or Never, got %q", c.KubePullPolicy)
		}
	default:
		return fmt.Errorf("--runtime: must be docker, kubernetes or none, got %q", c.Runtime)
	}
	if c.AgentControlURL != "" {
		u, err := url.Parse(c.AgentControlURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("--agent-control-url: must be an http(s) URL with no path, got %q", c.AgentControlURL)
		}
		c.AgentControlURL = strings.TrimRight(c.AgentControlURL, "/")
	}
	if c.MaxSnapshotsPerProject < 0 {
		return fmt.Errorf("--max-snapshots-per-project: must be 0 (no limit) or more, got %d", c.MaxSnapshotsPerProject)
	}
	if c.MaxContainersPerProject < 0 {
		return fmt.Errorf("--max-containers-per-project: must be 0 (no limit) or more, got %d", c.MaxContainersPerProject)
	}
	if c.EnrollTimeout == 0 {
		c.EnrollTimeout = 60 * time.Second
	}
	if c.EnrollTimeout < time.Second || c.EnrollTimeout > 30*time.Minute {
		return fmt.Errorf("--enroll-timeout: must be between 1s and 30m, got %s", c.EnrollTimeout)
	}
	if c.ServerName == "" {
		c.ServerName = "local"
	}
	if !labelRe.MatchString(c.ServerName) {
		return fmt.Errorf("--server-name: must be one DNS label (lowercase letters, digits, '-'), got %q", c.ServerName)
	}
	if c.ContainerDomain == "" {
		c.ContainerDomain = "localhost"
	}
	for _, l := range strings.Split(c.ContainerDomain, ".") {
		if !labelRe.MatchString(l) {
			return fmt.Errorf("--container-domain: must be a DNS name of lowercase labels, got %q", c.ContainerDomain)
		}
	}
	return nil
}

// installationID is this control plane's id on engines: made at first
// start, kept in the store (replicas of one database share it).
func installationID(db *store.DB) (string, error) {
	var id string
	err := db.Update(func(tx *store.Tx) error {
		if raw := tx.GetRaw(bucketServer, installationKey); raw != nil {
			id = string(raw)
			return nil
		}
		id = "i" + strings.ToLower(rand.Text()[:15])
		return tx.PutRaw(bucketServer, installationKey, []byte(id))
	})
	return id, err
}

// openRuntime builds the driver of --runtime. It makes nothing in the
// engine: the agents' listener (and the network it is on) come with the
// first container (agentControlURL).
func (s *Server) openRuntime() error {
	var err error
	if s.installation, err = installationID(s.db); err != nil {
		return fmt.Errorf("installation id: %w", err)
	}
	switch s.cfg.Runtime {
	case "docker":
		drv, err := docker.New(context.Background(), docker.Options{Host: s.cfg.DockerHost, Installation: s.installation, GatewayPort: projects.AgentPort,
			FilesDir: s.engineFilesDir()})
		if err != nil {
			return err
		}
		s.driver = drv
	case "kubernetes":
		drv, err := kubernetes.New(kubernetes.Options{Kubeconfig: s.cfg.Kubeconfig, Context: s.cfg.KubeContext,
			Namespace: s.cfg.KubeNamespace, Installation: s.installation, GatewayPort: projects.AgentPort,
			StorageClass: s.cfg.KubeStorageClass, PullPolicy: corev1.PullPolicy(s.cfg.KubePullPolicy)})
		if err != nil {
			return err
		}
		s.driver = kubeEngine{drv}
	}
	if s.driver != nil {
		// Servers with endpoints run containers too: the fleet routes each
		// container to its server's engine, the local one by default.
		s.driver = fleet.New(fleet.Options{DB: s.db, Sealer: s.sealer, Local: s.driver, Installation: s.installation,
			GatewayPort: projects.AgentPort, KubePullPolicy: corev1.PullPolicy(s.cfg.KubePullPolicy), KubeStorageClass: s.cfg.KubeStorageClass, Log: s.log})
	}
	return nil
}

// engine is a driver the server runs containers on: the runtime seam,
// and where the engine's containers reach the host.
type engine interface {
	runtime.Driver
	HostAddr(ctx context.Context) (string, error)
}

// kubeEngine has no host address: validateRuntime insists on
// --agent-control-url.
type kubeEngine struct{ *kubernetes.Driver }

func (kubeEngine) HostAddr(context.Context) (string, error) {
	return "", errors.New("set --agent-control-url: Pods reach the control plane through the cluster's network")
}

// agentControlURL is the URL the agents are given: --agent-control-url,
// or a listener on the engine bridge's gateway at the --listen port,
// opened on first use and served like the API.
func (s *Server) agentControlURL(ctx context.Context) (string, error) {
	if s.cfg.AgentControlURL != "" {
		return s.cfg.AgentControlURL, nil
	}
	s.agentMu.Lock()
	defer s.agentMu.Unlock()
	if s.agentURL != "" {
		return s.agentURL, nil
	}
	gw, err := s.driver.HostAddr(ctx)
	if err != nil {
		if errors.Is(err, runtime.ErrUnavailable) {
			return "", err
		}
		return "", fmt.Errorf("the engine's network for the agents: %w", err)
	}
	_, port, err := net.SplitHostPort(s.ln.Addr().String())
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, port))
	if err != nil {
		return "", fmt.Errorf("listen for the agents on the engine bridge %s (or set --agent-control-url): %w", gw, err)
	}
	s.serving.add(ln)
	s.agentURL = "http://" + ln.Addr().String()
	s.log.Info("agents reach the control plane on the engine bridge", "agent_control_url", s.agentURL)
	return s.agentURL, nil
}

// runtimeConfig is the projects domain's Runtime section.
func (s *Server) runtimeConfig() projects.Runtime {
	services := append([]string(nil), agentservices.Names...)
	sort.Strings(services)
	rt := projects.Runtime{AgentControlURL: s.agentControlURL, EnrollTimeout: s.cfg.EnrollTimeout,
		MaxPerProject: s.cfg.MaxContainersPerProject, MaxSnapshots: s.cfg.MaxSnapshotsPerProject, ContainerDomain: s.cfg.ContainerDomain, ServerName: s.cfg.ServerName,
		Services: services}
	rt.URLScheme, rt.URLPort = s.proxyURLParts()
	if s.driver != nil {
		rt.Driver = s.driver
	}
	if fl, ok := s.driver.(*fleet.Fleet); ok {
		rt.Servers = fl
	}
	return rt
}

// listeners accepts the connections of every listener added to it (the
// API's, then the agents' once opened), so the host serves them as one.
// Its Addr is the first's; Close closes them all.
type listeners struct {
	mu    sync.Mutex
	lns   []net.Listener
	conns chan acceptResult
	done  chan struct{}
	once  sync.Once
}

type acceptResult struct {
	c   net.Conn
	err error
}

func newListeners(first net.Listener) *listeners {
	j := &listeners{conns: make(chan acceptResult), done: make(chan struct{})}
	j.add(first)
	return j
}

// add serves ln too; after Close it closes ln.
func (j *listeners) add(ln net.Listener) {
	j.mu.Lock()
	defer j.mu.Unlock()
	select {
	case <-j.done:
		_ = ln.Close()
		return
	default:
	}
	j.lns = append(j.lns, ln)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil && isTemporary(err) {
				continue
			}
			select {
			case j.conns <- acceptResult{c, err}:
			case <-j.done:
				if c != nil {
					_ = c.Close()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

func (j *listeners) Accept() (net.Conn, error) {
	select {
	case r := <-j.conns:
		if r.err != nil {
			_ = j.Close()
			return nil, net.ErrClosed
		}
		return r.c, nil
	case <-j.done:
		return nil, net.ErrClosed
	}
}

func (j *listeners) Close() error {
	var errs []error
	j.once.Do(func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		close(j.done)
		for _, ln := range j.lns {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

func (j *listeners) Addr() net.Addr {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lns[0].Addr()
}

func isTemporary(err error) bool {
	var ne interface{ Temporary() bool }
	return errors.As(err, &ne) && ne.Temporary()
}

// engineFilesDir is where the Docker driver keeps containers' files for
// the engine to bind-mount, when the engine is on this host (a unix
// socket): below the data directory. Empty for a remote engine, which
// gets them through its archive API.
func (s *Server) engineFilesDir() string {
	host := s.cfg.DockerHost
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host != "" && !strings.HasPrefix(host, "unix://") {
		return ""
	}
	dir, err := filepath.Abs(filepath.Join(s.cfg.Data, "engine-files"))
	if err != nil {
		return ""
	}
	return dir
}
