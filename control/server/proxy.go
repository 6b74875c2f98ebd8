package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"deckhand/control/projects"
	"deckhand/control/proxy"
)

// The platform proxy (--proxy-listen) serves every container's
// per-service URL on its own listener, beside the API: it finds the
// container in the projects domain and hands the request to its agent.

func (c *Config) validateProxy() error {
	if c.ProxyListen == "" {
		if c.ProxyTLS {
			return errors.New("--proxy-tls: needs --proxy-listen")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.ProxyListen); err != nil {
		return fmt.Errorf("--proxy-listen: must be host:port, got %q", c.ProxyListen)
	}
	if c.ProxyWakeTimeout < time.Second || c.ProxyWakeTimeout > 10*time.Minute {
		return fmt.Errorf("--proxy-wake-timeout: must be between 1s and 10m, got %s", c.ProxyWakeTimeout)
	}
	if c.ProxyMaxConns < 1 || c.ProxyMaxConns > 65535 {
		return fmt.Errorf("--proxy-max-conns-per-container: must be 1-65535, got %d", c.ProxyMaxConns)
	}
	if c.ProxyRatePerSecond < 0 {
		return fmt.Errorf("--proxy-rate-per-container: must be 0 (no bound) or more, got %d", c.ProxyRatePerSecond)
	}
	if c.ProxyTLS {
		files := c.ProxyTLSCert != "" || c.ProxyTLSKey != ""
		if files == (c.ProxyACMEDirectory != "") {
			return errors.New("--proxy-tls: give either --proxy-tls-cert and --proxy-tls-key, or --proxy-acme-directory")
		}
	} else if c.ProxyTLSCert != "" || c.ProxyTLSKey != "" || c.ProxyACMEDirectory != "" {
		return errors.New("--proxy-tls-cert, --proxy-tls-key and --proxy-acme-directory need --proxy-tls")
	}
	return nil
}

// proxyCatalog is the proxy's view of the projects domain.
type proxyCatalog struct{ svc *projects.Service }

func (c proxyCatalog) Find(ctx context.Context, prefix, server string) (proxy.Container, error) {
	ct, err := c.svc.ContainerByHost(ctx, prefix, server)
	if err != nil {
		return proxy.Container{}, err
	}
	return proxy.Container{ID: ct.ID, ProjectID: ct.ProjectID, Status: ct.Status, Reason: ct.StatusReason,
		Autostart: ct.Autostart, Addr: ct.AgentAddr}, nil
}

func (c proxyCatalog) Wake(ctx context.Context, id string) error { return c.svc.WakeContainer(ctx, id) }

func (c proxyCatalog) Changed(id string) (<-chan struct{}, func()) { return c.svc.Changed(id) }

func (s *Server) projectsService() *projects.Service {
	for _, d := range s.domains {
		if p, ok := d.(*projects.Service); ok {
			return p
		}
	}
	return nil
}

// listenProxy binds --proxy-listen.
func (s *Server) listenProxy() error {
	if s.cfg.ProxyListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.ProxyListen)
	if err != nil {
		return fmt.Errorf("--proxy-listen: %w", err)
	}
	s.proxyLn = ln
	return nil
}

// serveProxy serves the platform proxy until ctx ends.
func (s *Server) serveProxy(ctx context.Context) (stop func(), err error) {
	if s.proxyLn == nil {
		return func() {}, nil
	}
	svc := s.projectsService()
	if svc == nil {
		return nil, errors.New("the platform proxy needs the projects domain")
	}
	p := proxy.New(proxy.Config{Domain: s.cfg.ContainerDomain, WakeTimeout: s.cfg.ProxyWakeTimeout,
		MaxConnsPerContainer: s.cfg.ProxyMaxConns, MaxRequestsPerSecond: s.cfg.ProxyRatePerSecond,
		HeaderTimeout: s.cfg.HeaderTimeout, Logger: s.log}, proxyCatalog{svc})
	srv := p.Server()
	ln := s.proxyLn
	scheme := "http"
	if s.cfg.ProxyTLS {
		tc, err := p.TLSConfig(proxy.TLS{CertFile: s.cfg.ProxyTLSCert, KeyFile: s.cfg.ProxyTLSKey,
			ACMEDirectory: s.cfg.ProxyACMEDirectory, Email: s.cfg.ProxyACMEEmail, ACMERoots: s.cfg.ProxyACMERoots,
			Storage: filepath.Join(s.cfg.Data, "certmagic")})
		if err != nil {
			return nil, err
		}
		srv.TLSConfig = tc
		ln = tls.NewListener(ln, tc)
		scheme = "https"
	}
	go func() {
		serve := func() error { return p.Serve(srv, ln) }
		if s.cfg.ProxyTLS {
			// TLS stays with net/http: the front reads plain HTTP only.
			serve = func() error { return srv.Serve(ln) }
		}
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.log.Error("platform proxy stopped", "err", err)
		}
	}()
	s.log.Info("platform proxy listening", "addr", s.proxyLn.Addr().String(), "scheme", scheme, "domain", s.cfg.ContainerDomain)
	fmt.Fprintf(s.out, "deckhand-control: platform proxy on %s://%s for *.%s.%s\n", scheme, s.proxyLn.Addr(), s.cfg.ServerName, s.cfg.ContainerDomain)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
		p.Close()
	}, nil
}

// proxyURLParts are the scheme and port the containers' URLs name.
func (s *Server) proxyURLParts() (scheme, port string) {
	if s.cfg.ProxyListen == "" {
		return "https", ""
	}
	scheme = "http"
	if s.cfg.ProxyTLS {
		scheme = "https"
	}
	_, port, _ = net.SplitHostPort(s.cfg.ProxyListen)
	if s.proxyLn != nil {
		_, port, _ = net.SplitHostPort(s.proxyLn.Addr().String())
	}
	return scheme, port
}
