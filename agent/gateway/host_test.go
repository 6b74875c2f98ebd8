package gateway_test

import (
	"testing"

	"deckhand/agent/gateway"
)

func TestParseHost(t *testing.T) {
	t.Parallel()
	known := []string{"notifications", "cron", "files", "terminal", "run", "exec"}
	cases := []struct {
		host, domain string
		ok           bool
		want         gateway.HostRoute
	}{
		{"p1-c1-cron-1.srv1.example.com", "example.com", true, gateway.HostRoute{Prefix: "p1-c1", Service: "cron", Instance: 1, Server: "srv1"}},
		{"p1-c1-cron-1.srv1.example.com:7700", "example.com", true, gateway.HostRoute{Prefix: "p1-c1", Service: "cron", Instance: 1, Server: "srv1"}},
		{"P1-C1-Files-1.SRV.Example.COM", "example.com", true, gateway.HostRoute{Prefix: "p1-c1", Service: "files", Instance: 1, Server: "srv"}},
		// UUID ids carry hyphens: the prefix keeps them whole.
		{"0b7e-11aa-77ff-22bb-terminal-1.eu-1.localhost", "localhost", true, gateway.HostRoute{Prefix: "0b7e-11aa-77ff-22bb", Service: "terminal", Instance: 1, Server: "eu-1"}},
		// server names may be dotted
		{"p-c-exec-2.a.b.localhost", "localhost", true, gateway.HostRoute{Prefix: "p-c", Service: "exec", Instance: 2, Server: "a.b"}},
		// a container id ending in a service name still parses from the right
		{"p-run-notifications-1.s.localhost", "localhost", true, gateway.HostRoute{Prefix: "p-run", Service: "notifications", Instance: 1, Server: "s"}},
		{"p-c-cron-1.s.localhost.", "localhost", false, gateway.HostRoute{}},
		{"localhost:7700", "localhost", false, gateway.HostRoute{}},
		{"127.0.0.1:7700", "localhost", false, gateway.HostRoute{}},
		{"[::1]:7700", "localhost", false, gateway.HostRoute{}},
		{"p-c-cron-1.localhost", "localhost", false, gateway.HostRoute{}},       // no server name
		{"p-c-vault-1.s.localhost", "localhost", false, gateway.HostRoute{}},    // not a known name
		{"cron-1.s.localhost", "localhost", false, gateway.HostRoute{}},         // no project/container
		{"p-c-cron-x.s.localhost", "localhost", false, gateway.HostRoute{}},     // instance not a number
		{"p-c-cron-0.s.localhost", "localhost", false, gateway.HostRoute{}},     // instances start at 1
		{"p-c-cron-+1.s.localhost", "localhost", false, gateway.HostRoute{}},    // no signs
		{"p-c-cron-1.s.example.org", "example.com", false, gateway.HostRoute{}}, // other domain
		{"p-c-cron-1.s.notexample.com", "example.com", false, gateway.HostRoute{}},
		{"", "localhost", false, gateway.HostRoute{}},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			got, ok := gateway.ParseHost(tc.host, tc.domain, known)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseHost(%q, %q) = %+v, %v; want %+v, %v", tc.host, tc.domain, got, ok, tc.want, tc.ok)
			}
		})
	}
}
