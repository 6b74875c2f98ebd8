//go:build !linux

package terminal

import (
	"os"
	"os/exec"
	"syscall"

	"deckhand/platform/fault"
)

const (
	sigHangup = syscall.Signal(1)
	sigKill   = syscall.Signal(9)
)

func resolveShell(shell string) (string, error) { return shell, nil }

func startShell(string, string, []string, *syscall.Credential, int, int) (*os.File, *exec.Cmd, error) {
	return nil, nil, fault.Errorf(fault.CodeUnavailable, "terminal sessions need Linux")
}

func setSize(*os.File, int, int) error { return nil }

func signalGroup(int, syscall.Signal) {}
