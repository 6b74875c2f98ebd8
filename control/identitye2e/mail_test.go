package identitye2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each mail's delivery is logged with where it went (here the file the
// server wrote), never with its body or the token in it.
func TestMailDeliveryIsLogged(t *testing.T) {
	t.Parallel()
	s := start(t, "--log-level", "info")
	s.must(s.call("POST", "/api/v1/auth/signup", map[string]any{"email": "logged@example.com", "password": goodPW}, ""), 200)
	token := s.mailToken("logged@example.com")
	files, err := filepath.Glob(filepath.Join(s.data, "mail", "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	var mine string
	for _, f := range files {
		if body, _ := os.ReadFile(f); strings.Contains(string(body), token) {
			mine = f
		}
	}
	s.stop() // the log is read whole once the server is gone (its stderr is a pipe)
	logged := s.stderr()
	if mine == "" || !strings.Contains(logged, "mail written") || !strings.Contains(logged, mine) {
		t.Fatalf("the log does not say where the mail went (%q of %v):\n%s", mine, files, logged)
	}
	if strings.Contains(logged, token) {
		t.Fatalf("the log carries the mail's token:\n%s", logged)
	}
}
