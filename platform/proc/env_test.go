package proc_test

import (
	"slices"
	"strings"
	"testing"

	"deckhand/platform/proc"
)

// TestEnvDropsTheAgentsOwnAndLayers: the agent's own settings never reach
// a program; a later layer replaces an earlier entry of the same name in
// place, so each name appears once.
func TestEnvDropsTheAgentsOwnAndLayers(t *testing.T) {
	t.Setenv("DECKHAND_TOKEN", "agt_secret")
	t.Setenv("NOTIFY_SOCKET", "/run/notify")
	t.Setenv("WATCHDOG_USEC", "1000")
	t.Setenv("LISTEN_FDS", "1")
	t.Setenv("PROGENV_KEPT", "agent")
	env := proc.Env([]string{"HOME=/home/u", "PROGENV_KEPT=user"}, proc.Vars(map[string]string{"B": "2", "A": "1", "HOME": "/h"}),
		[]string{"DECKHAND_PROCESS_ID=p1"})
	names := map[string]int{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names[k]++
		if names[k] > 1 {
			t.Errorf("%s appears twice: %v", k, env)
		}
	}
	for _, k := range []string{"DECKHAND_TOKEN", "NOTIFY_SOCKET", "WATCHDOG_USEC", "LISTEN_FDS"} {
		if names[k] != 0 {
			t.Errorf("%s passed on: %v", k, env)
		}
	}
	for _, kv := range []string{"HOME=/h", "PROGENV_KEPT=user", "A=1", "B=2", "DECKHAND_PROCESS_ID=p1"} {
		if !slices.Contains(env, kv) {
			t.Errorf("%s missing: %v", kv, env)
		}
	}
	if a, b := slices.Index(env, "A=1"), slices.Index(env, "B=2"); a > b {
		t.Errorf("Vars not in name order: %v", env)
	}
}
