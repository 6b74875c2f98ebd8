package proc

import (
	"maps"
	"os"
	"slices"
	"strings"
)

// AgentOnly reports whether an environment variable of the agent's belongs
// to the agent and never to a program it starts: its own settings
// (DECKHAND_*, among them its agt_ token and the gateway token of the
// CLI), and what the agent's own supervisor handed only to it (systemd's
// notify socket, watchdog and socket activation).
func AgentOnly(name string) bool {
	switch {
	case strings.HasPrefix(name, "DECKHAND_"), strings.HasPrefix(name, "WATCHDOG_"), strings.HasPrefix(name, "LISTEN_"):
		return true
	}
	return name == "NOTIFY_SOCKET"
}

// Env is the environment of a program the agent starts, the one builder
// every service that runs a program uses: the agent's own environment
// without what is AgentOnly, then each layer in order (the user's HOME,
// USER and LOGNAME from Attr, the service's own variables, the caller's
// from Vars). A later entry replaces an earlier one of the same name, so
// each name appears once; layers are passed on as given (what a caller
// sets for its own program is its to set).
func Env(layers ...[]string) []string {
	env := make([]string, 0, 64)
	at := map[string]int{}
	put := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := at[k]; ok {
			env[i] = kv
			return
		}
		at[k] = len(env)
		env = append(env, kv)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !AgentOnly(k) {
			put(kv)
		}
	}
	for _, layer := range layers {
		for _, kv := range layer {
			put(kv)
		}
	}
	return env
}

// Vars is m as NAME=value entries in name order, a layer for Env.
func Vars(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// WorkDir is cwd, or else the user's home (from Attr's environment) when
// it is a directory, or else /.
func WorkDir(cwd string, userEnv []string) string {
	if cwd != "" {
		return cwd
	}
	for _, kv := range userEnv {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			if st, err := os.Stat(h); err == nil && st.IsDir() {
				return h
			}
		}
	}
	return "/"
}

// CheckEnv names the first variable of env that cannot be passed to a
// process (an empty name, '=' or NUL in the name, NUL in the value).
func CheckEnv(env map[string]string) (string, bool) {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return k, false
		}
	}
	return "", true
}
