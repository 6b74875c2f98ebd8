package terminal_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the shells under test an empty home: the machine's
// ~/.bashrc may run slow or locking commands (pyenv rehash takes a lock that
// a shell killed mid-startup leaves behind), which would make the tests
// depend on whoever configured the machine.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "terminal-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
