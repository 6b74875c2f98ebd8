package servers_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"deckhand/control/catalogtest"
	"deckhand/control/servers"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// testCert is a self-signed certificate and its key, in PEM.
func testCert(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "engine"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: secret-kube-token
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

func TestEndpointRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	srv := e.create(t, "box-1", "eu", "0")
	cert, key := testCert(t)
	for _, c := range []struct {
		field string
		in    servers.EndpointBody
	}{
		{"capacity", servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/d.sock"}},
		{"capacity", servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/d.sock", Capacity: servers.MaxCapacity + 1}},
		{"driver", servers.EndpointBody{Driver: "lxc", Capacity: 1}},
		{"docker_host", servers.EndpointBody{Driver: "docker", Capacity: 1}},
		{"docker_host", servers.EndpointBody{Driver: "docker", DockerHost: "unix://run/d.sock", Capacity: 1}},
		{"docker_host", servers.EndpointBody{Driver: "docker", DockerHost: "http://h:2376", Capacity: 1}},
		{"docker_host", servers.EndpointBody{Driver: "docker", DockerHost: "tcp://h", Capacity: 1}},
		{"tls_ca", servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/d.sock", TLSCA: cert, Capacity: 1}},
		{"tls_ca", servers.EndpointBody{Driver: "docker", DockerHost: "tcp://h:2376", TLSCert: cert, TLSKey: key, Capacity: 1}},
		{"tls_key", servers.EndpointBody{Driver: "docker", DockerHost: "tcp://h:2376", TLSCA: cert, TLSCert: cert, Capacity: 1}},
		{"tls_cert", servers.EndpointBody{Driver: "docker", DockerHost: "tcp://h:2376", TLSCA: cert, TLSCert: cert, TLSKey: "junk", Capacity: 1}},
		{"tls_ca", servers.EndpointBody{Driver: "docker", DockerHost: "tcp://h:2376", TLSCA: "junk", TLSCert: cert, TLSKey: key, Capacity: 1}},
		{"namespace", servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/d.sock", Namespace: "x", Capacity: 1}},
		{"kubeconfig", servers.EndpointBody{Driver: "kubernetes", Namespace: "ns", Capacity: 1}},
		{"kubeconfig", servers.EndpointBody{Driver: "kubernetes", Kubeconfig: "{{{", Namespace: "ns", Capacity: 1}},
		{"kube_context", servers.EndpointBody{Driver: "kubernetes", Kubeconfig: kubeconfig, KubeContext: "other", Namespace: "ns", Capacity: 1}},
		{"namespace", servers.EndpointBody{Driver: "kubernetes", Kubeconfig: kubeconfig, Namespace: "Not_A_Label", Capacity: 1}},
		{"docker_host", servers.EndpointBody{Driver: "kubernetes", Kubeconfig: kubeconfig, Namespace: "ns", DockerHost: "unix:///x", Capacity: 1}},
		// Credentials that would make the control plane read its files or
		// run a program are refused.
		{"kubeconfig", servers.EndpointBody{Driver: "kubernetes", Kubeconfig: strings.Replace(kubeconfig, "token: secret-kube-token", "tokenFile: /etc/shadow", 1), Namespace: "ns", Capacity: 1}},
		{"kubeconfig", servers.EndpointBody{Driver: "kubernetes", Kubeconfig: strings.Replace(kubeconfig, "token: secret-kube-token",
			"exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}", 1), Namespace: "ns", Capacity: 1}},
	} {
		_, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: srv.ID}, Body: c.in})
		var pe *fault.Error
		if !errors.As(err, &pe) || pe.Code != fault.CodeInvalid || pe.Field != c.field {
			t.Errorf("%+v: %v, want INVALID on %s", c.in, err, c.field)
		}
	}
	good := servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/d.sock", Capacity: 1}
	if _, err := e.svc.SetEndpoint(catalogtest.User("u"), servers.EndpointInput{ServerRef: servers.ServerRef{ID: srv.ID}, Body: good}); code(err) != fault.CodeForbidden {
		t.Fatalf("user sets an endpoint: %v", err)
	}
	if _, err := e.svc.Drain(catalogtest.User("u"), servers.DrainInput{ServerRef: servers.ServerRef{ID: srv.ID}}); code(err) != fault.CodeForbidden {
		t.Fatalf("user drains: %v", err)
	}
	if _, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: "srv_" + strings.Repeat("0", 24)}, Body: good}); code(err) != fault.CodeNotFound {
		t.Fatalf("unknown server: %v", err)
	}
	// Nothing was written by any refusal.
	runners(t, e, 0)
}

func runners(t *testing.T, e *env, want int) []servers.Runner {
	t.Helper()
	var rs []servers.Runner
	if err := e.db.View(func(tx *store.Tx) error {
		var err error
		rs, err = servers.Runners(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(rs) != want {
		t.Fatalf("runners %+v, want %d", rs, want)
	}
	return rs
}

func TestEndpointIsSealedAndNeverAnswered(t *testing.T) {
	e := newEnv(t)
	srv := e.create(t, "box-1", "eu", "0")
	cert, key := testCert(t)
	body := servers.EndpointBody{Driver: "docker", DockerHost: "tcp://engine.example:2376", TLSCA: cert, TLSCert: cert, TLSKey: key, Capacity: 3}
	got, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: srv.ID}, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if got.Driver != "docker" || got.Capacity != 3 || got.Draining == nil || *got.Draining {
		t.Fatalf("answer %+v", got)
	}
	secretParts := []string{"engine.example", "PRIVATE KEY", strings.Split(key, "\n")[1][:20]}
	for _, who := range []struct {
		name string
		get  func() (any, error)
	}{
		{"set", func() (any, error) { return got, nil }},
		{"admin get", func() (any, error) { return e.svc.Get(admin, servers.ServerRef{ID: srv.ID}) }},
		{"user get", func() (any, error) { return e.svc.Get(catalogtest.User("u"), servers.ServerRef{ID: srv.ID}) }},
		{"marketplace", func() (any, error) { return e.svc.Available(catalogtest.User("u")) }},
	} {
		v, err := who.get()
		if err != nil {
			t.Fatal(who.name, err)
		}
		raw, _ := json.Marshal(v)
		for _, p := range secretParts {
			if strings.Contains(string(raw), p) {
				t.Fatalf("%s answers %q: %s", who.name, p, raw)
			}
		}
		if who.name == "user get" || who.name == "marketplace" {
			if strings.Contains(string(raw), `"driver"`) || strings.Contains(string(raw), `"capacity"`) {
				t.Fatalf("%s shows a user the endpoint's settings: %s", who.name, raw)
			}
		}
	}
	// At rest the record holds the endpoint sealed only.
	var raw []byte
	_ = e.db.View(func(tx *store.Tx) error { raw = tx.GetRaw("servers", srv.ID); return nil })
	for _, p := range secretParts {
		if strings.Contains(string(raw), p) {
			t.Fatalf("the stored record holds %q in clear: %s", p, raw)
		}
	}
	rs := runners(t, e, 1)
	ep, err := servers.OpenEndpoint(e.sealer, rs[0].Sealed)
	if err != nil || ep.DockerHost != body.DockerHost || ep.TLSKey != key {
		t.Fatalf("opened %+v %v", ep, err)
	}
	if tc, err := ep.TLSConfig(); err != nil || len(tc.Certificates) != 1 {
		t.Fatalf("tls %v %v", tc, err)
	}

	// Drain and undrain, each with its event; a server keeps its driver.
	d, err := e.svc.Drain(admin, servers.DrainInput{ServerRef: servers.ServerRef{ID: srv.ID}})
	if err != nil || d.Draining == nil || !*d.Draining || !runners(t, e, 1)[0].Draining {
		t.Fatalf("drain %+v %v", d, err)
	}
	if d, err = e.svc.Undrain(admin, servers.DrainInput{ServerRef: servers.ServerRef{ID: srv.ID}}); err != nil || *d.Draining {
		t.Fatalf("undrain %+v %v", d, err)
	}
	_, err = e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: srv.ID},
		Body: servers.EndpointBody{Driver: "kubernetes", Kubeconfig: kubeconfig, Namespace: "ns", Capacity: 1}})
	if pe := (*fault.Error)(nil); !errors.As(err, &pe) || pe.Code != fault.CodeConflict || pe.Field != "driver" {
		t.Fatalf("driver change: %v", err)
	}
}

func TestEndpointNeedsAUsableName(t *testing.T) {
	e := newEnv(t)
	good := servers.EndpointBody{Driver: "docker", DockerHost: "unix:///run/d.sock", Capacity: 1}
	set := func(id string) error {
		_, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: id}, Body: good})
		return err
	}
	for _, name := range []string{"Big Box", "local"} {
		s := e.create(t, name, "eu", "0")
		var pe *fault.Error
		if err := set(s.ID); !errors.As(err, &pe) || pe.Code != fault.CodeConflict || pe.Field != "name" {
			t.Fatalf("%q: %v", name, err)
		}
	}
	a, b := e.create(t, "twin", "eu", "0"), e.create(t, "twin", "us", "0")
	if err := set(a.ID); err != nil {
		t.Fatal(err)
	}
	if err := set(b.ID); code(err) != fault.CodeConflict {
		t.Fatalf("second endpoint named twin: %v", err)
	}
	// Draining needs an endpoint.
	if _, err := e.svc.Drain(admin, servers.DrainInput{ServerRef: servers.ServerRef{ID: b.ID}}); code(err) != fault.CodeConflict {
		t.Fatalf("drain without endpoint: %v", err)
	}
	// A kubernetes endpoint opens to a client configuration.
	k := e.create(t, "kube-1", "eu", "0")
	if _, err := e.svc.SetEndpoint(admin, servers.EndpointInput{ServerRef: servers.ServerRef{ID: k.ID},
		Body: servers.EndpointBody{Driver: "kubernetes", Kubeconfig: kubeconfig, Namespace: "sandboxes", Capacity: 5}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range runners(t, e, 2) {
		if r.ID != k.ID {
			continue
		}
		ep, err := servers.OpenEndpoint(e.sealer, r.Sealed)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := ep.RESTConfig()
		if err != nil || rc.BearerToken != "secret-kube-token" || rc.Host != "https://127.0.0.1:6443" || ep.Namespace != "sandboxes" {
			t.Fatalf("rest config %+v %v", rc, err)
		}
	}
}
