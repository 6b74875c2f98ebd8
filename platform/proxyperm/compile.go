package proxyperm

import (
	"crypto"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	"deckhand/platform/secrets"
)

// Policy is a document compiled for evaluation: every string parsed once.
// It is immutable and safe for concurrent use.
type Policy struct {
	Container string
	Project   string
	// DefaultAllow is default == "allow".
	DefaultAllow bool
	// Enabled is enable_proxy.
	Enabled bool
	// Groups in name order.
	Groups []CompiledGroup
	// Rules of each group name, including names without a group (rules of
	// a removed group stay and match no identity).
	Rules map[string]Rules
	// Version is the document's file_version.
	Version int64
}

// CompiledGroup is one group with its credentials parsed.
type CompiledGroup struct {
	Name string
	Type string
	// jwt
	Algorithm string
	HMACKey   []byte           // HS256
	PublicKey crypto.PublicKey // RS256, ES256
	Sources   []Source
	Claims    map[string]any
	// password
	Username string
	Salt     string
	Hash     []byte         // sha256: SHA256(salt + password)
	argon    *argonPassword // argon2id
	// ip
	Prefix netip.Prefix
	// token: Location is "header", "cookie" or "param"
	Location, Name2, Value string
	// service-identity
	Containers, Projects []string
	// Tools is the group's mcp_tools (nil: none).
	Tools []string
}

// Source is where a JWT is read from.
type Source struct {
	Cookie bool // false: a header
	Name   string
}

// Compile validates d (hashing nothing: a plaintext password group is
// refused, documents are stored normalized) and parses it for evaluation.
func Compile(d *Document) (*Policy, error) {
	c := *d
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{Container: c.Container, Project: c.Project, DefaultAllow: c.Default == Allow, Enabled: c.Proxy(),
		Rules: c.Permissions, Version: c.FileVersion}
	for _, name := range c.GroupNames() {
		g := c.Groups[name]
		if g.Masked() {
			return nil, fmt.Errorf("group %s: holds a masked secret (<field>_configured), which cannot be enforced", name)
		}
		cg := CompiledGroup{Name: name, Type: g.Type, Tools: g.MCPTools}
		switch g.Type {
		case TypeJWT:
			cg.Algorithm, cg.Claims = g.Algorithm, g.Claims
			if g.Algorithm == "HS256" {
				cg.HMACKey = []byte(g.Secret)
			} else {
				k, err := ParsePublicKey(g.Algorithm, g.Secret)
				if err != nil {
					return nil, err
				}
				cg.PublicKey = k
			}
			for _, s := range g.Sources {
				kind, n, _ := strings.Cut(s, ":")
				cg.Sources = append(cg.Sources, Source{Cookie: kind == "cookie", Name: n})
			}
		case TypePassword:
			cg.Username = g.Username
			switch g.Algorithm {
			case PasswordSHA256:
				h, _ := hex.DecodeString(g.Password)
				cg.Salt, cg.Hash = g.Salt, h
			case PasswordArgon2id:
				h, err := secrets.ParsePasswordHash(g.Password)
				if err != nil {
					return nil, fmt.Errorf("group %s: %w", name, err)
				}
				cg.argon = &argonPassword{encoded: g.Password, hash: h}
			default:
				return nil, fmt.Errorf("group %s: password is not hashed (normalize the document before storing it)", name)
			}
		case TypeIP:
			cg.Prefix, _ = ParseRange(g.Range)
		case TypeToken:
			cg.Value = g.Value
			switch {
			case g.Header != "":
				cg.Location, cg.Name2 = "header", g.Header
			case g.Cookie != "":
				cg.Location, cg.Name2 = "cookie", g.Cookie
			default:
				cg.Location, cg.Name2 = "param", g.Param
			}
		case TypeServiceIdentity:
			cg.Containers, cg.Projects = g.Containers, g.Projects
		}
		p.Groups = append(p.Groups, cg)
	}
	return p, nil
}

// Allows decides program and port for a request whose credentials matched
// the named groups: allowed when any of them has a rule for program that
// admits port, else the default. A disabled proxy allows nothing.
func (p *Policy) Allows(matched []string, program string, port int) bool {
	if !p.Enabled {
		return false
	}
	for _, g := range matched {
		if a, ok := p.Rules[g][program]; ok && a.Allows(port) {
			return true
		}
	}
	return p.DefaultAllow
}
