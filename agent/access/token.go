package access

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// The agent token may be replaced while the agent runs: a container of
// the control plane's warm pool starts with a token of the pool, and the
// create that claims it mints the container's own token, writes it over
// the token file (through the engine, as the first one was) and drops the
// pool's at once. The agent reads the file again when the control plane
// answers 401, so the new token never crosses the network and the old
// one is refused from the claim on.

// ReadTokenFile reads the agent token from path: one line, refused when
// other users may read or write the file (it is a credential).
func ReadTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("--token-file %s is open to other users (mode %#o): it holds a credential; chmod 600 it", path, fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("--token-file %s: must hold one token on one line", path)
	}
	return tok, nil
}

// credential is the token in force and the file it came from.
type credential struct {
	mu    sync.Mutex
	token string
	file  string
}

func (c *credential) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// renew reads the token file again after used was refused: the new
// token, or "" when there is no file or it still holds used.
func (c *credential) renew(used string) string {
	if c.file == "" {
		return ""
	}
	tok, err := ReadTokenFile(c.file)
	if err != nil || !strings.HasPrefix(tok, AgentTokenPrefix) || tok == used {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = tok
	return tok
}
