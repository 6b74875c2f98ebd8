package netconf

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// MaxListEntries bounds each of allow and deny.
const MaxListEntries = 256

// ListError is an entry that does not parse: Field names it as the API
// does (`allow[3]`), Rule says what it must be.
type ListError struct {
	Field, Rule string
}

func (e *ListError) Error() string { return e.Field + ": " + e.Rule }

// List is one compiled allow or deny list.
type List struct {
	exact    map[string]bool // example.com
	suffixes []string        // ".example.com" from *.example.com
	any      bool            // *
	prefixes []netip.Prefix
}

// Empty reports whether the list names nothing.
func (l *List) Empty() bool {
	return l == nil || (len(l.exact) == 0 && len(l.suffixes) == 0 && !l.any && len(l.prefixes) == 0)
}

// ParseList compiles entries; field is the list's name in errors.
func ParseList(field string, entries []string) (*List, error) {
	if len(entries) > MaxListEntries {
		return nil, &ListError{Field: field, Rule: fmt.Sprintf("at most %d entries, got %d", MaxListEntries, len(entries))}
	}
	l := &List{exact: map[string]bool{}}
	for i, raw := range entries {
		f := field + "[" + strconv.Itoa(i) + "]"
		e := strings.TrimSpace(raw)
		if e == "" {
			return nil, &ListError{Field: f, Rule: "must not be empty"}
		}
		if e == "*" {
			l.any = true
			continue
		}
		if strings.ContainsAny(e, "/:") || isIPLiteral(e) {
			p, err := parsePrefix(e)
			if err != nil {
				return nil, &ListError{Field: f, Rule: "must be a domain, *.domain, an IP address or a CIDR (" + err.Error() + ")"}
			}
			l.prefixes = append(l.prefixes, p)
			continue
		}
		wild := strings.HasPrefix(e, "*.")
		name, ok := NormalizeName(strings.TrimPrefix(e, "*."))
		if !ok || strings.Contains(name, "*") {
			return nil, &ListError{Field: f, Rule: "must be a domain, *.domain, an IP address or a CIDR"}
		}
		if wild {
			l.suffixes = append(l.suffixes, "."+name)
		} else {
			l.exact[name] = true
		}
	}
	return l, nil
}

func isIPLiteral(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad CIDR")
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("no zone allowed")
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("bad address")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// NormalizeName lowercases a DNS name, drops one trailing dot and checks it
// is a plausible host name (labels of letters, digits, '-' and '_', each
// 1-63 bytes, 253 in all). IP literals are not names.
func NormalizeName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return "", false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return s, true
}

// MatchName reports whether a (normalized) name is on the list.
func (l *List) MatchName(name string) bool {
	if l == nil || name == "" {
		return false
	}
	if l.any || l.exact[name] {
		return true
	}
	return slices.ContainsFunc(l.suffixes, func(s string) bool { return strings.HasSuffix(name, s) })
}

// MatchAddr reports whether an address is in one of the list's CIDRs.
func (l *List) MatchAddr(a netip.Addr) bool {
	if l == nil {
		return false
	}
	a = a.Unmap()
	return slices.ContainsFunc(l.prefixes, func(p netip.Prefix) bool { return p.Contains(a) })
}

// Lists are a configuration's compiled allow and deny lists.
type Lists struct {
	Allow, Deny *List
}

// CompileLists parses both lists (errors name allow[i] or deny[i]).
func CompileLists(allow, deny []string) (Lists, error) {
	a, err := ParseList("allow", allow)
	if err != nil {
		return Lists{}, err
	}
	d, err := ParseList("deny", deny)
	if err != nil {
		return Lists{}, err
	}
	return Lists{Allow: a, Deny: d}, nil
}

// Active reports whether either list names something.
func (ls Lists) Active() bool { return !ls.Allow.Empty() || !ls.Deny.Empty() }

// Verdict is a decision and why, for the journal.
type Verdict struct {
	Allowed bool
	Reason  string
}

// NameAllowed is the resolver's decision for a question: a denied name,
// or under an allow list a name it does not name, is refused.
func (ls Lists) NameAllowed(name string) Verdict {
	switch {
	case ls.Deny.MatchName(name):
		return Verdict{false, "name on the deny list"}
	case ls.Allow.Empty():
		return Verdict{true, "no allow list"}
	case ls.Allow.MatchName(name):
		return Verdict{true, "name on the allow list"}
	}
	return Verdict{false, "name not on the allow list"}
}

// Decide judges one connection to dst. claimed is the name the connection
// itself presents (TLS SNI or HTTP Host; "" when none or an IP literal);
// resolved are the names the agent's resolver answered dst for.
func (ls Lists) Decide(dst netip.Addr, claimed string, resolved []string) Verdict {
	if ls.Deny.MatchAddr(dst) {
		return Verdict{false, "address on the deny list"}
	}
	if claimed != "" && ls.Deny.MatchName(claimed) {
		return Verdict{false, "name " + claimed + " on the deny list"}
	}
	for _, n := range resolved {
		if ls.Deny.MatchName(n) {
			return Verdict{false, "address resolved from " + n + ", on the deny list"}
		}
	}
	if ls.Allow.Empty() {
		return Verdict{true, "no allow list"}
	}
	if ls.Allow.MatchAddr(dst) {
		return Verdict{true, "address on the allow list"}
	}
	if claimed != "" {
		if !ls.Allow.MatchName(claimed) {
			return Verdict{false, "name " + claimed + " not on the allow list"}
		}
		if slices.Contains(resolved, claimed) {
			return Verdict{true, "name " + claimed + " on the allow list"}
		}
		return Verdict{false, "name " + claimed + " was not resolved to this address by the agent's resolver"}
	}
	for _, n := range resolved {
		if ls.Allow.MatchName(n) {
			return Verdict{true, "address resolved from " + n + ", on the allow list"}
		}
	}
	return Verdict{false, "address not on the allow list and not resolved from an allowed name"}
}
