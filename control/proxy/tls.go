package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"deckhand/platform/hostroute"
)

// TLS is how the proxy gets its certificates (--proxy-tls): one
// certificate from files (a wildcard for *.<server>.<domain>), or
// certificates issued on demand by an ACME server for the names of
// containers that exist.
type TLS struct {
	CertFile, KeyFile string
	// ACMEDirectory is the ACME server's directory URL.
	ACMEDirectory string
	Email         string
	// ACMERoots is a PEM file of roots trusted for the ACME server
	// itself (a private CA); empty: the system's.
	ACMERoots string
	// Storage is the folder certificates and account keys are kept in.
	Storage string
}

// TLSConfig answers the proxy's TLS settings. Names are issued for only
// when they name a container that exists (Allowed), so nobody can make
// the proxy ask for certificates for names of their choosing.
func (p *Proxy) TLSConfig(t TLS) (*tls.Config, error) {
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, errors.New("proxy TLS: a certificate file needs its key file, and a key file its certificate")
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("proxy TLS: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}, nil
	}
	if t.ACMEDirectory == "" {
		return nil, errors.New("proxy TLS: give a certificate and key file, or an ACME directory URL")
	}
	if t.Storage == "" {
		return nil, errors.New("proxy TLS: no folder for certificates")
	}
	var roots *x509.CertPool
	if t.ACMERoots != "" {
		pem, err := os.ReadFile(t.ACMERoots)
		if err != nil {
			return nil, fmt.Errorf("proxy TLS: ACME roots: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("proxy TLS: %s holds no PEM certificate", t.ACMERoots)
		}
	}
	var cfg *certmagic.Config
	cache := certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: func(certmagic.Certificate) (*certmagic.Config, error) { return cfg, nil },
		Logger:           zap.NewNop(),
	})
	cfg = certmagic.New(cache, certmagic.Config{
		Storage:  &certmagic.FileStorage{Path: t.Storage},
		OnDemand: &certmagic.OnDemandConfig{DecisionFunc: p.Allowed},
		Logger:   zap.NewNop(),
	})
	cfg.Issuers = []certmagic.Issuer{certmagic.NewACMEIssuer(cfg, certmagic.ACMEIssuer{
		CA: t.ACMEDirectory, TestCA: t.ACMEDirectory, Email: t.Email, Agreed: true, TrustedRoots: roots,
		// The proxy answers only TLS: the challenge is TLS-ALPN on
		// the proxy's own port.
		DisableHTTPChallenge: true,
		Logger:               zap.NewNop(),
	})}
	tc := cfg.TLSConfig()
	// HTTP/1.1 (WebSockets pass as upgrades) and the ACME challenge.
	tc.NextProtos = slices.DeleteFunc(tc.NextProtos, func(p string) bool { return p == "h2" })
	if !slices.Contains(tc.NextProtos, "http/1.1") {
		tc.NextProtos = append([]string{"http/1.1"}, tc.NextProtos...)
	}
	tc.MinVersion = tls.VersionTLS12
	return tc, nil
}

// Allowed says whether a certificate may be issued for name: it must be
// a container host of the domain naming a container that exists.
func (p *Proxy) Allowed(ctx context.Context, name string) error {
	hr, ok := hostroute.Parse(name, p.cfg.Domain, p.known)
	if !ok || hr.Instance != 1 {
		return fmt.Errorf("%q is not a container host under %s", name, p.cfg.Domain)
	}
	c, err := p.cat.Find(ctx, hr.Prefix, hr.Server)
	if err != nil {
		return err
	}
	if c.Status == "deleting" {
		return fmt.Errorf("container %s is being deleted", c.ID)
	}
	return nil
}
