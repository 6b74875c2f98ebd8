package agent_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"deckhand/agent"
	"deckhand/control/agentservices"
	"deckhand/platform/contract"
	"deckhand/platform/platformtest"
)

func TestSelect(t *testing.T) {
	t.Parallel()
	all := agent.Registered()
	cases := []struct {
		list   string
		want   []string
		errHas string
	}{
		{"", all, ""},
		{"all", all, ""},
		{"files", []string{"files"}, ""},
		{"files, cron,files", []string{"cron", "files"}, ""}, // port order, no duplicates
		{"cron,bogus", nil, `unknown service "bogus"`},
		{",", nil, "no service named"},
	}
	for _, tc := range cases {
		t.Run(tc.list, func(t *testing.T) {
			got, err := agent.Select(tc.list)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "--services") {
					t.Fatalf("err %v, want one naming --services and %q", err, tc.errHas)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func TestSelectIsolated(t *testing.T) {
	t.Parallel()
	running := []string{"cron", "files"}
	cases := []struct {
		list   string
		want   map[string]bool
		errHas string
	}{
		{"display", map[string]bool{}, ""}, // the default is harmless without a display service
		{"", map[string]bool{}, ""},
		{"none", map[string]bool{}, ""},
		{"cron", map[string]bool{"cron": true}, ""},
		{"cron,files,display", map[string]bool{"cron": true, "files": true}, ""},
		{"crn", nil, `--isolate: unknown service "crn"`},
	}
	for _, tc := range cases {
		t.Run(tc.list, func(t *testing.T) {
			got, err := agent.SelectIsolated(tc.list, running)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func TestRegistryMatchesThePortTable(t *testing.T) {
	t.Parallel()
	want := map[string]int{"cron": 1, "files": 2, "terminal": 3, "display": 4, "vault": 5, "tunnel": 6, "daemon": 7,
		"exec": 8, "journal": 9, "workspace": 10, "notes": 11, "run": 12, "curl": 13, "notifications": 14, "process": 15, "mcp": 16}
	if !reflect.DeepEqual(agent.Offsets, want) {
		t.Fatalf("offsets %v differ from docs/spec/operations.md %v", agent.Offsets, want)
	}
	seen := map[int]bool{}
	for _, name := range agent.Registered() {
		e, ok := agent.Lookup(name)
		if !ok || e.Name != name || (e.New == nil && (e.Binary == "" || e.Unavailable == nil)) {
			t.Fatalf("registered %q has no constructor", name)
		}
		port := agent.Port(7700, name)
		if port != 7700+want[name] || seen[port] {
			t.Fatalf("%s: port %d", name, port)
		}
		seen[port] = true
	}
	for _, must := range []string{"cron", "files"} {
		if _, ok := agent.Lookup(must); !ok {
			t.Fatalf("%s is not registered", must)
		}
	}
	if !reflect.DeepEqual(agent.Registered(), agent.Known()) {
		t.Fatalf("every service of docs/spec/operations.md is built in: registered %v, known %v", agent.Registered(), agent.Known())
	}
	// The copies others read: the control plane's names of a container's
	// services, and the offsets the mcp service's tools call ports by.
	names := append([]string(nil), agentservices.Names...)
	sort.Strings(names)
	reg := agent.Registered()
	sort.Strings(reg)
	if !reflect.DeepEqual(names, reg) {
		t.Fatalf("the control plane knows the services %v, the agent registers %v", names, reg)
	}
}

// TestEveryServiceNamesABadQueryParameter builds every registered service
// as the agent does and sends each query parameter its route table declares
// every value its rules refuse: each answers 400 INVALID naming it.
func TestEveryServiceNamesABadQueryParameter(t *testing.T) {
	t.Parallel()
	set := agent.DefaultSettings()
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range agent.Registered() {
		t.Run(name, func(t *testing.T) {
			e, _ := agent.Lookup(name)
			var svc contract.ContainerService
			if e.New != nil {
				var err error
				if svc, err = e.New(platformtest.ServiceDeps(t, name), set.Of(name)); err != nil {
					t.Fatal(err)
				}
			} else {
				svc = e.Unavailable("no display in this test")
			}
			if c, ok := svc.(contract.Closer); ok {
				t.Cleanup(func() { _ = c.Close() })
			}
			h := platformtest.ServiceHost(t, svc)
			total += platformtest.CheckQueryValidation(t, h)
			platformtest.CheckRoutesDocumented(t, h)
			if info := svc.Info(); info.Title == "" || info.Description == "" {
				t.Errorf("%s has an untitled OpenAPI document: %+v", name, info)
			}
		})
	}
	if total == 0 {
		t.Fatal("no service declares a query parameter")
	}
}
