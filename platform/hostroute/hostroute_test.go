package hostroute_test

import (
	"testing"

	"deckhand/platform/hostroute"
)

func TestParse(t *testing.T) {
	t.Parallel()
	known := []string{"notifications", "cron", "files", "terminal", "run", "exec"}
	type R = hostroute.Route
	cases := []struct {
		host, domain string
		ok           bool
		want         R
	}{
		{"p1-c1-cron-1.srv1.example.com", "example.com", true, R{Prefix: "p1-c1", Service: "cron", Instance: 1, Server: "srv1"}},
		{"p1-c1-cron-1.srv1.example.com:7700", "example.com", true, R{Prefix: "p1-c1", Service: "cron", Instance: 1, Server: "srv1"}},
		{"P1-C1-Files-1.SRV.Example.COM", "example.com", true, R{Prefix: "p1-c1", Service: "files", Instance: 1, Server: "srv"}},
		// UUID ids carry hyphens: the prefix keeps them whole.
		{"0b7e-11aa-77ff-22bb-terminal-1.eu-1.localhost", "localhost", true, R{Prefix: "0b7e-11aa-77ff-22bb", Service: "terminal", Instance: 1, Server: "eu-1"}},
		// server names may be dotted
		{"p-c-exec-2.a.b.localhost", "localhost", true, R{Prefix: "p-c", Service: "exec", Instance: 2, Server: "a.b"}},
		// a container id ending in a service name still parses from the right
		{"p-run-notifications-1.s.localhost", "localhost", true, R{Prefix: "p-run", Service: "notifications", Instance: 1, Server: "s"}},
		// port previews
		{"p-c-p8080-1.local.localhost", "localhost", true, R{Prefix: "p-c", Service: "p8080", Port: 8080, Instance: 1, Server: "local"}},
		{"P-C-P3000-1.LOCAL.LOCALHOST:80", "localhost", true, R{Prefix: "p-c", Service: "p3000", Port: 3000, Instance: 1, Server: "local"}},
		{"p-c-p65535-1.s.localhost", "localhost", true, R{Prefix: "p-c", Service: "p65535", Port: 65535, Instance: 1, Server: "s"}},
		{"p-c-p65536-1.s.localhost", "localhost", false, R{}}, // past the last port
		{"p-c-p0-1.s.localhost", "localhost", false, R{}},
		{"p-c-p080-1.s.localhost", "localhost", false, R{}}, // one port, one name
		{"p-c-p8x-1.s.localhost", "localhost", false, R{}},
		{"p8080-1.s.localhost", "localhost", false, R{}}, // no project/container
		{"p-c-cron-1.s.localhost.", "localhost", false, R{}},
		{"p-c-p80-1.s.localhost.", "localhost", false, R{}},
		{"localhost:7700", "localhost", false, R{}},
		{"127.0.0.1:7700", "localhost", false, R{}},
		{"[::1]:7700", "localhost", false, R{}},
		{"p-c-cron-1.localhost", "localhost", false, R{}},       // no server name
		{"p-c-vault-1.s.localhost", "localhost", false, R{}},    // not a known name
		{"cron-1.s.localhost", "localhost", false, R{}},         // no project/container
		{"p-c-cron-x.s.localhost", "localhost", false, R{}},     // instance not a number
		{"p-c-cron-0.s.localhost", "localhost", false, R{}},     // instances start at 1
		{"p-c-cron-+1.s.localhost", "localhost", false, R{}},    // no signs
		{"p-c-cron-1.s.example.org", "example.com", false, R{}}, // other domain
		{"p-c-cron-1.s.notexample.com", "example.com", false, R{}},
		{"", "localhost", false, R{}},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			got, ok := hostroute.Parse(tc.host, tc.domain, known)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Parse(%q, %q) = %+v, %v; want %+v, %v", tc.host, tc.domain, got, ok, tc.want, tc.ok)
			}
		})
	}
}
