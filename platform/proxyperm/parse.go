package proxyperm

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

const errEmpty = "is required"

// ParseRange reads an IPv4 CIDR "a.b.c.d/m" with m 0-32.
func ParseRange(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, errors.New(errEmpty)
	}
	addr, bits, ok := strings.Cut(s, "/")
	if !ok {
		return netip.Prefix{}, fmt.Errorf("must be an IPv4 CIDR a.b.c.d/m, got %q (no /m)", clip(s))
	}
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return netip.Prefix{}, fmt.Errorf("must be an IPv4 CIDR a.b.c.d/m, got %q (bad IPv4 address)", clip(s))
	}
	if len(bits) == 0 || len(bits) > 2 || (len(bits) == 2 && bits[0] == '0') {
		return netip.Prefix{}, fmt.Errorf("must be an IPv4 CIDR a.b.c.d/m with m 0-32, got %q", clip(s))
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("must be an IPv4 CIDR a.b.c.d/m with m 0-32, got %q", clip(s))
	}
	return p.Masked(), nil
}

// ParsePublicKey reads the PEM SPKI ("PUBLIC KEY") key of an RS256 (RSA,
// at least 2048 bits) or ES256 (ECDSA P-256) jwt group.
func ParsePublicKey(alg, secret string) (crypto.PublicKey, error) {
	block, rest := pem.Decode([]byte(strings.TrimSpace(secret)))
	if block == nil {
		return nil, fmt.Errorf("must be a PEM public key for %s (no PEM block found)", alg)
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("must be a PEM SPKI public key (BEGIN PUBLIC KEY) for %s, got %q", alg, block.Type)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, fmt.Errorf("must hold exactly one PEM block")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("is not a parsable SPKI public key for %s", alg)
	}
	switch alg {
	case "RS256":
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("must be an RSA public key for RS256")
		}
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("RSA key must have at least 2048 bits, got %d", k.N.BitLen())
		}
		return k, nil
	case "ES256":
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("must be an ECDSA P-256 public key for ES256")
		}
		return k, nil
	}
	return nil, fmt.Errorf("algorithm %s takes no public key", alg)
}
