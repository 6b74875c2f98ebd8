//go:build !linux

package proc

import (
	"errors"
	"os"
	"syscall"
)

// Attr is supported on Linux only.
func Attr(userName string) (*syscall.SysProcAttr, []string, error) {
	return nil, nil, errors.New("running programs is supported on Linux only")
}

// Credential is supported on Linux only.
func Credential(userName string) (*syscall.Credential, []string, error) {
	return nil, nil, errors.New("running as another user is supported on Linux only")
}

// KillGroup is supported on Linux only.
func KillGroup(pgid int, sig syscall.Signal) error { return errors.New("supported on Linux only") }

// Descendants is supported on Linux only.
func Descendants(pid int) []int { return nil }

// KillTree is supported on Linux only.
func KillTree(pid int, sig syscall.Signal) {}

var errClosed = errors.New("the service is stopping")

// OpenPTY is supported on Linux only.
func OpenPTY(cols, rows int) (master, tty *os.File, err error) {
	return nil, nil, errors.New("pseudo-terminals are supported on Linux only")
}

// SetWinsize is supported on Linux only.
func SetWinsize(f *os.File, cols, rows int) error { return errors.New("supported on Linux only") }
