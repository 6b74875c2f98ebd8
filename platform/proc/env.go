package proc

import (
	"os"
	"sort"
	"strings"
)

// Env is a command's environment: the agent's, then the user's HOME, USER
// and LOGNAME (from Attr), then extra in name order.
func Env(userEnv []string, extra map[string]string) []string {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := append(os.Environ(), userEnv...)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
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
