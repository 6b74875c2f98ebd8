package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pkiDir holds the cluster's certificates and keys.
type pkiDir string

func (p pkiDir) file(name string) string { return filepath.Join(string(p), name) }

// makePKI writes a CA, the API server's serving certificate, an admin
// client certificate (system:masters, used by every component and the
// tests) and the service-account signing key.
func makePKI(dir string) (pkiDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	p := pkiDir(dir)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "deckhand-kubetest-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	if err := writePEM(p.file("ca.crt"), "CERTIFICATE", caDER); err != nil {
		return "", err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(name string, serial int64, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(p.file(name+".crt"), "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(p.file(name+".key"), "EC PRIVATE KEY", kb)
	}
	if err := leaf("apiserver", 2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
	}); err != nil {
		return "", err
	}
	if err := leaf("admin", 3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "deckhand-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return "", err
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	if err := writePEM(p.file("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)); err != nil {
		return "", err
	}
	return p, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

// writeKubeconfig writes the admin kubeconfig for server.
func writeKubeconfig(path, server string, p pkiDir) error {
	cfg := "apiVersion: v1\nkind: Config\n" +
		"clusters:\n- name: kubetest\n  cluster:\n    server: " + server + "\n    certificate-authority: " + p.file("ca.crt") + "\n" +
		"users:\n- name: admin\n  user:\n    client-certificate: " + p.file("admin.crt") + "\n    client-key: " + p.file("admin.key") + "\n" +
		"contexts:\n- name: kubetest\n  context:\n    cluster: kubetest\n    user: admin\n    namespace: " + Namespace + "\n" +
		"current-context: kubetest\n"
	return os.WriteFile(path, []byte(cfg), 0o600)
}
