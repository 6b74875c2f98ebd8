//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// Attr is supported on Linux only.
func Attr(userName string) (*syscall.SysProcAttr, []string, error) {
	return nil, nil, errors.New("running programs is supported on Linux only")
}

// KillGroup is supported on Linux only.
func KillGroup(pgid int, sig syscall.Signal) error { return errors.New("supported on Linux only") }

// Descendants is supported on Linux only.
func Descendants(pid int) []int { return nil }

// KillTree is supported on Linux only.
func KillTree(pid int, sig syscall.Signal) {}

var errClosed = errors.New("the service is stopping")
