package clientip_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"deckhand/platform/clientip"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	proxy := netip.MustParseAddr("127.0.0.1")
	cases := []struct {
		name  string
		peer  string
		lines []string
		want  string
	}{
		{"no header", "127.0.0.1", nil, "127.0.0.1"},
		{"one hop", "127.0.0.1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"right-most of a list", "127.0.0.1", []string{"6.6.6.6, 203.0.113.9"}, "203.0.113.9"},
		{"proxy appends its own line", "127.0.0.1", []string{"6.6.6.6", "203.0.113.9"}, "203.0.113.9"},
		{"proxy appends a line to a client list", "10.0.0.2", []string{"6.6.6.6, 7.7.7.7", "203.0.113.9"}, "203.0.113.9"},
		{"hop with a port", "127.0.0.1", []string{"6.6.6.6, 1.2.3.4:80"}, "127.0.0.1"},
		{"unknown hop", "127.0.0.1", []string{"6.6.6.6, unknown"}, "127.0.0.1"},
		{"unknown line after a client line", "127.0.0.1", []string{"6.6.6.6", "unknown"}, "127.0.0.1"},
		{"bracketed IPv6", "127.0.0.1", []string{"6.6.6.6, [2001:db8::1]"}, "127.0.0.1"},
		{"bracketed IPv6 with port", "127.0.0.1", []string{"6.6.6.6, [2001:db8::1]:443"}, "127.0.0.1"},
		{"IPv6 hop", "127.0.0.1", []string{"6.6.6.6, 2001:db8::1"}, "2001:db8::1"},
		{"IPv6 with a zone", "127.0.0.1", []string{"6.6.6.6, fe80::1%eth0"}, "127.0.0.1"},
		{"IPv4-mapped IPv6 hop", "127.0.0.1", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"IPv6 loopback peer", "::1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"IPv4-mapped loopback peer", "::ffff:127.0.0.1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"spaces and tabs around the hop", "127.0.0.1", []string{"6.6.6.6 ,\t 203.0.113.9 \t"}, "203.0.113.9"},
		{"space inside the hop", "127.0.0.1", []string{"6.6.6.6, 203.0.113 .9"}, "127.0.0.1"},
		{"empty header", "127.0.0.1", []string{""}, "127.0.0.1"},
		{"empty last line", "127.0.0.1", []string{"6.6.6.6", ""}, "127.0.0.1"},
		{"trailing comma", "127.0.0.1", []string{"6.6.6.6,"}, "127.0.0.1"},
		{"only spaces", "127.0.0.1", []string{"6.6.6.6,   "}, "127.0.0.1"},
		{"leading zeros", "127.0.0.1", []string{"6.6.6.6, 010.1.1.1"}, "127.0.0.1"},
		{"hostname", "127.0.0.1", []string{"6.6.6.6, example.com"}, "127.0.0.1"},
		{"obfuscated node (RFC 7239 style)", "127.0.0.1", []string{"6.6.6.6, _hidden"}, "127.0.0.1"},
		{"public peer speaks for itself", "198.51.100.7", []string{"203.0.113.9"}, "198.51.100.7"},
		{"link-local peer", "169.254.1.1", []string{"203.0.113.9"}, "203.0.113.9"},
		{"private IPv6 peer", "fd00::5", []string{"203.0.113.9"}, "203.0.113.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer := netip.MustParseAddr(tc.peer)
			got := clientip.Resolve(peer, tc.lines)
			if got.String() != tc.want {
				t.Fatalf("Resolve(%s, %q) = %s, want %s", tc.peer, tc.lines, got, tc.want)
			}
			// The byte form (fasthttp's PeekAll) answers the same.
			var raw [][]byte
			for _, l := range tc.lines {
				raw = append(raw, []byte(l))
			}
			if got := clientip.Resolve(peer, raw); got.String() != tc.want {
				t.Fatalf("Resolve(%s, %q) as bytes = %s, want %s", tc.peer, tc.lines, got, tc.want)
			}
		})
	}
	if got := clientip.Resolve(netip.Addr{}, []string{"203.0.113.9"}); got.IsValid() {
		t.Fatalf("an unknown peer named a client: %s", got)
	}
	if got := clientip.Resolve(proxy, []string(nil)); got != proxy {
		t.Fatalf("no lines: %s", got)
	}
}

func TestFromIP(t *testing.T) {
	t.Parallel()
	if got := clientip.FromIP(net.ParseIP("127.0.0.1")); got != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("16-byte IPv4: %s", got)
	}
	if got := clientip.FromIP(nil); got.IsValid() {
		t.Fatalf("nil: %s", got)
	}
}

// FuzzClientIP: whatever the header holds, the answer is the peer or the
// header's right-most element read as a bare address, never a hop further
// left and never something that is not an address.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"", "203.0.113.9", "6.6.6.6, 1.2.3.4:80", "6.6.6.6, unknown", "6.6.6.6\n203.0.113.9",
		"[2001:db8::1]", "2001:db8::1", " 203.0.113.9 ", "6.6.6.6,", "6.6.6.6\n", "fe80::1%eth0", "::ffff:1.2.3.4",
		"1.1.1.1,2.2.2.2,3.3.3.3", "\t,\t", "6.6.6.6, 010.1.1.1"} {
		f.Add("127.0.0.1", s)
		f.Add("198.51.100.7", s)
	}
	f.Fuzz(func(t *testing.T, peerText, header string) {
		peer, err := netip.ParseAddr(peerText)
		if err != nil {
			peer = netip.Addr{}
		}
		lines := strings.Split(header, "\n") // a newline separates header lines here
		got := clientip.Resolve(peer, lines)
		// The oracle: the list joined, its last element alone decides.
		all := strings.Split(strings.Join(lines, ","), ",")
		last, err := netip.ParseAddr(strings.Trim(all[len(all)-1], " \t"))
		want := peer.Unmap()
		if err == nil && last.Zone() == "" && clientip.Trusted(want) {
			want = last.Unmap()
		}
		if got != want {
			t.Fatalf("Resolve(%s, %q) = %s, want %s (right-most element %q)", peer, lines, got, want, all[len(all)-1])
		}
	})
}
