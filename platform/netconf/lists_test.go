package netconf_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"deckhand/platform/netconf"
)

func TestParseListRefusesWhatIsNotAnEntry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		entry, field string
	}{
		{"", "allow[0]"},
		{"exa mple.com", "allow[0]"},
		{"*.*.com", "allow[0]"},
		{"foo*.com", "allow[0]"},
		{"10.0.0.0/33", "allow[0]"},
		{"fe80::1%eth0", "allow[0]"},
		{"a..b", "allow[0]"},
		{strings.Repeat("a", 64) + ".com", "allow[0]"},
	} {
		_, err := netconf.ParseList("allow", []string{c.entry})
		var le *netconf.ListError
		if !errors.As(err, &le) || le.Field != c.field {
			t.Errorf("%q: %v, want an error on %s", c.entry, err, c.field)
		}
	}
	many := make([]string, netconf.MaxListEntries+1)
	for i := range many {
		many[i] = "a.com"
	}
	if _, err := netconf.ParseList("deny", many); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many entries: %v", err)
	}
}

func TestListsDecide(t *testing.T) {
	t.Parallel()
	ls, err := netconf.CompileLists([]string{"api.example.com", "*.cdn.example", "192.0.2.0/24", "2001:db8::/32"},
		[]string{"bad.cdn.example", "192.0.2.66"})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	for _, c := range []struct {
		name     string
		dst      string
		claimed  string
		resolved []string
		allowed  bool
		reason   string
	}{
		{"allowed CIDR", "192.0.2.10", "", nil, true, "address on the allow list"},
		{"allowed v6 CIDR", "2001:db8::1", "", nil, true, "address on the allow list"},
		{"denied address beats allowed CIDR", "192.0.2.66", "", nil, false, "address on the deny list"},
		{"IP literal", "198.51.100.7", "", nil, false, "not resolved from an allowed name"},
		{"resolved allowed name", "198.51.100.7", "", []string{"api.example.com"}, true, "resolved from api.example.com"},
		{"SNI that fits the answer", "198.51.100.7", "api.example.com", []string{"api.example.com"}, true, "on the allow list"},
		{"SNI fronting", "198.51.100.7", "api.example.com", []string{"other.example"}, false, "was not resolved to this address"},
		{"SNI never resolved", "198.51.100.7", "api.example.com", nil, false, "was not resolved to this address"},
		{"Host not allowed", "198.51.100.7", "evil.example", []string{"api.example.com"}, false, "not on the allow list"},
		{"wildcard", "198.51.100.8", "x.y.cdn.example", []string{"x.y.cdn.example"}, true, "on the allow list"},
		{"wildcard is not its apex", "198.51.100.8", "cdn.example", []string{"cdn.example"}, false, "not on the allow list"},
		{"denied name under a wildcard", "198.51.100.8", "bad.cdn.example", []string{"bad.cdn.example"}, false, "deny list"},
		{"address of a denied name", "198.51.100.9", "", []string{"bad.cdn.example"}, false, "deny list"},
	} {
		v := ls.Decide(a(c.dst), c.claimed, c.resolved)
		if v.Allowed != c.allowed || !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: %+v, want allowed=%v with %q", c.name, v, c.allowed, c.reason)
		}
	}
	if v := ls.NameAllowed("evil.example"); v.Allowed {
		t.Errorf("resolver let an unlisted name through: %+v", v)
	}
	if v := ls.NameAllowed("a.cdn.example"); !v.Allowed {
		t.Errorf("resolver refused a listed name: %+v", v)
	}

	denyOnly, _ := netconf.CompileLists(nil, []string{"*"})
	if v := denyOnly.NameAllowed("anything.example"); v.Allowed {
		t.Errorf("deny * let a name through")
	}
	none, _ := netconf.CompileLists(nil, nil)
	if none.Active() || !none.Decide(a("203.0.113.1"), "", nil).Allowed {
		t.Errorf("empty lists judge")
	}
}

func TestCompileChecksTheDocument(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc  netconf.Document
		want string
	}{
		{netconf.Document{Type: "vpn"}, "type"},
		{netconf.Document{Type: "socks5"}, "proxy: required"},
		{netconf.Document{Type: "http", Proxy: "socks5://h:1"}, "does not fit"},
		{netconf.Document{Type: "block", DNSServers: []string{"dns.example"}}, "dns_servers"},
		{netconf.Document{Type: "block", Allow: []string{"a b"}}, "allow[0]"},
	} {
		if _, err := netconf.Compile(&c.doc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.doc, err, c.want)
		}
	}
	cp, err := netconf.Compile(&netconf.Document{Type: "socks5", Proxy: "socks5h://u:p@proxy.example", DNSServers: []string{"192.0.2.53"}})
	if err != nil || cp.Proxy.Host != "proxy.example:1080" || cp.DNS[0].String() != "192.0.2.53:53" {
		t.Fatalf("%+v %v", cp, err)
	}
}
