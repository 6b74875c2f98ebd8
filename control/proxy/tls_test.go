package proxy_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"deckhand/control/proxy"
	"deckhand/platform/platformtest"
)

// pebble builds and starts pebble, a local ACME server (pinned in
// tools/go.mod), that takes every challenge as met: the names of
// containers resolve nowhere. It answers the directory URL, the file of
// the roots its API is served under, and a function that fetches the
// root it issues under.
func pebble(t *testing.T) (dir, apiRoots string, issuingRoot func() *x509.CertPool) {
	t.Helper()
	tools, err := filepath.Abs("../../tools")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "pebble")
	build := exec.Command("go", "build", "-o", bin, "github.com/letsencrypt/pebble/v2/cmd/pebble")
	build.Dir = tools
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pebble from tools/go.mod: %v\n%s", err, out)
	}
	mod := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/letsencrypt/pebble/v2")
	mod.Dir = tools
	mod.Env = append(os.Environ(), "GOWORK=off")
	out, err := mod.Output()
	if err != nil {
		t.Fatal(err)
	}
	src := strings.TrimSpace(string(out))
	base := platformtest.FreePortBase(t, 4)
	api, mgmt := "127.0.0.1:"+strconv.Itoa(base), "127.0.0.1:"+strconv.Itoa(base+1)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress": api, "managementListenAddress": mgmt,
		"certificate": filepath.Join(src, "test/certs/localhost/cert.pem"),
		"privateKey":  filepath.Join(src, "test/certs/localhost/key.pem"),
		"httpPort":    base + 2, "tlsPort": base + 3, "ocspResponderURL": "", "externalAccountBindingRequired": false,
	}}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(tmp, "pebble.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfgFile)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_ALWAYS_VALID=1", "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0",
		"PEBBLE_AUTHZREUSE=100")
	var logs platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	apiRoots = filepath.Join(src, "test/certs/pebble.minica.pem")
	pem, err := os.ReadFile(apiRoots)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cl.Get("https://" + api + "/dir")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not answer: %v %s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "https://" + api + "/dir", apiRoots, func() *x509.CertPool {
		resp, err := cl.Get("https://" + mgmt + "/roots/0")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		pem, _ := io.ReadAll(resp.Body)
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(pem) {
			t.Fatalf("pebble's root: %q", pem)
		}
		return p
	}
}

// TestOnDemandCertificatesOnlyForContainers issues a certificate through
// a real ACME server for the name of a container that exists, and none
// for a name the proxy does not serve.
func TestOnDemandCertificatesOnlyForContainers(t *testing.T) {
	acme, roots, issuing := pebble(t)
	a := agent(t, "proj", "ctr1")
	cat := &catalog{byID: map[string]*proxy.Container{"ctr1": {ID: "ctr1", ProjectID: "proj", Status: "running", Addr: a}}}
	p := proxy.New(proxy.Config{Domain: "deckhand.test"}, cat)
	tc, err := p.TLSConfig(proxy.TLS{ACMEDirectory: acme, ACMERoots: roots, Email: "ops@deckhand.test", Storage: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := p.Server()
	srv.TLSConfig = tc
	go func() { _ = srv.Serve(tls.NewListener(ln, tc)) }()
	t.Cleanup(func() { _ = srv.Close() })

	pool := issuing()
	dial := func(name string) (*http.Response, error) {
		cl := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: name},
			Dial:            func(_, _ string) (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) },
		}}
		return cl.Get("https://" + name + "/api/v1/files/stat?path=/")
	}
	resp, err := dial("proj-ctr1-files-1.local.deckhand.test")
	if err != nil {
		t.Fatalf("TLS to an existing container's host: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName == "" && len(resp.TLS.PeerCertificates[0].DNSNames) == 0 {
		t.Fatalf("through TLS: %d %q", resp.StatusCode, body)
	}
	if got := resp.TLS.PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != "proj-ctr1-files-1.local.deckhand.test" {
		t.Fatalf("certificate names %v", got)
	}
	for _, name := range []string{"proj-nope-files-1.local.deckhand.test", "evil.example.com", "deckhand.test"} {
		if resp, err := dial(name); err == nil {
			resp.Body.Close()
			t.Fatalf("a certificate was served for %s", name)
		}
	}
}
