package agent

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"deckhand/display/api"
	"deckhand/platform/contract"
	"deckhand/services/cron"
	"deckhand/services/curl"
	"deckhand/services/daemon"
	"deckhand/services/exec"
	"deckhand/services/files"
	"deckhand/services/journal"
	"deckhand/services/mcp"
	"deckhand/services/notes"
	"deckhand/services/notifications"
	"deckhand/services/process"
	"deckhand/services/run"
	"deckhand/services/terminal"
	"deckhand/services/tunnel"
	"deckhand/services/vault"
	"deckhand/services/workspace"
)

// Constructor builds a service from what the agent hands it and its
// settings (the value the entry's Settings made, after the flags parsed).
type Constructor func(contract.ServiceDeps, contract.Settings) (contract.ContainerService, error)

// Entry is one service the agent can run.
type Entry struct {
	Name string
	// Offset is the service's port offset (docs/spec/operations.md): it
	// listens on --port-base plus it.
	Offset int
	// Settings makes the service's settings, whose Flags the agent declares
	// on `deckhand run` and `deckhand service NAME`.
	Settings func() contract.Settings
	// New builds the service in-process (and for `deckhand service NAME`).
	New Constructor
	// Binary, when set, is an executable beside `deckhand` that serves this
	// service as a supervised child with flags --listen ADDR --data DIR and
	// its settings in DECKHAND_* variables. It runs when it exists and, with
	// NeedsDisplay, when a display is configured (--display or $DISPLAY).
	// Otherwise New runs in-process, or, when New is nil,
	// Unavailable(reason): a stand-in that serves the service's routes and
	// reports "unavailable" in /health.
	Binary       string
	NeedsDisplay bool
	Unavailable  func(reason string) contract.ContainerService
	// ActsFor lists the services this one calls on its caller's behalf:
	// the gateway judges the caller against each and tells the service
	// which passed (contract.ReachHeader). ToolList: a proxy permissions
	// document's tool allow-list (mcp_tools) limits this service's callers
	// (contract.ToolsHeader).
	ActsFor  []string
	ToolList bool
}

// acting is e calling the services for its caller, with a tool allow-list.
func (e Entry) acting(services []string) Entry {
	e.ActsFor, e.ToolList = services, true
	return e
}

// Service makes the registry entry of a service package: its port offset,
// its typed settings (S, declared by *S's Flags) and its New.
func Service[S any, PS interface {
	*S
	contract.Settings
}, V contract.ContainerService](name string, offset int, newFn func(contract.ServiceDeps, PS) (V, error)) Entry {
	return Entry{
		Name:     name,
		Offset:   offset,
		Settings: func() contract.Settings { return PS(new(S)) },
		New: func(d contract.ServiceDeps, s contract.Settings) (contract.ContainerService, error) {
			ps, ok := s.(PS)
			if !ok {
				return nil, fmt.Errorf("%s: settings of type %T, want %T", name, s, PS(nil))
			}
			return newFn(d, ps)
		},
	}
}

// NoErr adapts a New that cannot fail.
func NoErr[S, V any](newFn func(contract.ServiceDeps, S) V) func(contract.ServiceDeps, S) (V, error) {
	return func(d contract.ServiceDeps, s S) (V, error) { return newFn(d, s), nil }
}

// registry is every service built into this agent, each with its fixed
// port offset of docs/spec/operations.md. Adding a service is one line
// here; its flags then appear on `deckhand run --help` and reach it the
// same in-process and isolated.
var registry = []Entry{
	Service("cron", 1, cron.New),
	Service("files", 2, files.New),
	Service("terminal", 3, NoErr(terminal.New)),
	{Name: "display", Offset: 4, Settings: func() contract.Settings { return new(api.Settings) },
		Binary: "deckhand-display", NeedsDisplay: true,
		Unavailable: func(r string) contract.ContainerService { return api.NewUnavailable(r) }},
	Service("vault", 5, vault.New),
	Service("tunnel", 6, tunnel.New),
	Service("daemon", 7, daemon.New),
	Service("exec", 8, exec.New),
	Service("journal", 9, journal.New),
	Service("workspace", 10, workspace.New),
	Service("notes", 11, notes.New),
	Service("run", 12, run.New),
	Service("curl", 13, curl.New),
	Service("notifications", 14, notifications.New),
	Service("process", 15, process.New),
	Service("mcp", 16, mcp.New).acting(mcp.ActsFor),
}

// Offsets are the registry's port offsets by service name: a service's
// port is --port-base plus its offset.
var Offsets = func() map[string]int {
	m := make(map[string]int, len(registry))
	for _, e := range registry {
		m[e.Name] = e.Offset
	}
	return m
}()

// ActsFor are the registry's ActsFor by the name of each service that
// acts for its caller.
func ActsFor() map[string][]string {
	m := map[string][]string{}
	for _, e := range registry {
		if e.ActsFor != nil {
			m[e.Name] = e.ActsFor
		}
	}
	return m
}

// ToolList reports whether a tool allow-list limits service's callers.
func ToolList(service string) bool {
	e, ok := Lookup(service)
	return ok && e.ToolList
}

// Lookup finds a registered service.
func Lookup(name string) (Entry, bool) {
	for _, e := range registry {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Registered lists the registered services in port order.
func Registered() []string {
	var names []string
	for _, e := range registry {
		names = append(names, e.Name)
	}
	slices.SortFunc(names, byOffset)
	return names
}

// Known lists every service name of docs/spec/operations.md, registered or not.
func Known() []string { return slices.SortedFunc(maps.Keys(Offsets), byOffset) }

// byOffset orders service names by port.
func byOffset(a, b string) int { return cmp.Compare(Offsets[a], Offsets[b]) }

// Port is the service's port for a port base.
func Port(base int, name string) int { return base + Offsets[name] }

// OwnPorts lists the ports the agent itself uses, as a port list the
// tunnel's --tunnel-agent-ports takes: the gateway (base+0) and every
// service of the registry (base+offset), the gateway's --listen port when
// it is another, and the control plane's port when --control-url names a
// loopback host (a control plane on the same machine). None of them may
// be tunnelled, whatever the proxy permissions say.
func OwnPorts(base int, listen, controlURL string) string {
	hi := 0
	for _, off := range Offsets {
		hi = max(hi, off)
	}
	ports := []string{strconv.Itoa(base) + "-" + strconv.Itoa(base+hi)}
	if _, p, err := net.SplitHostPort(listen); err == nil {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n <= 65535 {
			ports = append(ports, p)
		}
	}
	if u, err := url.Parse(controlURL); err == nil && u.Host != "" && isLoopbackHost(u.Hostname()) {
		ports = append(ports, cmp.Or(u.Port(), map[string]string{"https": "443"}[u.Scheme], "80"))
	}
	return strings.Join(ports, ",")
}

// isLoopbackHost: localhost names and loopback addresses.
func isLoopbackHost(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// Select resolves a --services list ("all", empty, or comma names) to the
// registered services to run, in port order. Unknown names and names this
// build does not include are errors that say which names are valid.
func Select(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "all" {
		return Registered(), nil
	}
	out, err := knownNames("--services", list, "")
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--services: no service named")
	}
	slices.SortFunc(out, byOffset)
	return out, nil
}

// knownNames splits a comma list of service names of flag, without empty
// ones, skip and repeats; an unknown name is an error that lists the known.
func knownNames(flag, list, skip string) ([]string, error) {
	var out []string
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || n == skip || slices.Contains(out, n) {
			continue
		}
		if _, known := Offsets[n]; !known {
			return nil, fmt.Errorf("%s: unknown service %q (services: %s)", flag, n, strings.Join(Known(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// SelectIsolated resolves an --isolate list against the running set: names
// must be known services; known ones that are not running are ignored (the
// default "display" is harmless on an agent without a display service).
func SelectIsolated(list string, running []string) (map[string]bool, error) {
	names, err := knownNames("--isolate", list, "none")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		if slices.Contains(running, n) {
			out[n] = true
		}
	}
	return out, nil
}

// external finds the entry's own binary beside exe. It returns the binary to
// run, or why there is none to run ("" when the entry has no binary).
func (e Entry) external(exe, display string) (bin, reason string) {
	if e.Binary == "" {
		return "", ""
	}
	if e.NeedsDisplay && display == "" {
		return "", "no X display configured (set --display or $DISPLAY)"
	}
	path := filepath.Join(filepath.Dir(exe), e.Binary)
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", e.Binary + " is not installed beside deckhand (" + path + ")"
	}
	return path, ""
}

// constructor is how the entry is built in-process; reason is why its own
// binary is not running.
func (e Entry) constructor(reason string) Constructor {
	if e.New != nil {
		return e.New
	}
	if e.Unavailable != nil {
		return func(contract.ServiceDeps, contract.Settings) (contract.ContainerService, error) {
			return e.Unavailable(reason), nil
		}
	}
	return func(contract.ServiceDeps, contract.Settings) (contract.ContainerService, error) {
		return nil, fmt.Errorf("%s cannot run in-process: %s", e.Name, reason)
	}
}
