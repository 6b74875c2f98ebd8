package egresse2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// capNetRaw is CAP_NET_RAW's bit in /proc/<pid>/status's Cap* masks.
const capNetRaw = 13

// rawNetSets names the capability sets of the agent's threads that still
// hold CAP_NET_RAW.
func rawNetSets(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "status"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the agent's threads: %v", err)
	}
	var held []string
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, v, ok := strings.Cut(line, ":\t")
			if !ok || !strings.HasPrefix(name, "Cap") {
				continue
			}
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("%s: %s", p, line)
			}
			if mask&(1<<capNetRaw) != 0 {
				held = append(held, p+" "+name)
			}
		}
	}
	return held
}

// An agent that enforces the rules gives up CAP_NET_RAW (a packet socket
// gets around any nftables rule) in every set of every thread, the
// bounding set included, so no program it starts can have it. One that
// cannot enforce (no CAP_NET_ADMIN) leaves it.
func TestAgentGivesUpRawNetWhereItEnforces(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent(t)
	if held := rawNetSets(t, a.Pid()); len(held) != 0 {
		t.Fatalf("the agent still holds CAP_NET_RAW: %v", held)
	}
	a.Stop()

	b := e.startAgent(t, "setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin", "--")
	if held := rawNetSets(t, b.Pid()); len(held) == 0 {
		t.Fatal("an agent that cannot enforce gave up CAP_NET_RAW")
	}
}
