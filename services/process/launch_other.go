//go:build !linux

package process

import (
	"errors"
	"syscall"
)

var errLinuxOnly = errors.New("running processes is supported on Linux only")

func (s *Service) launch(p *process, _ *syscall.SysProcAttr, _ []string) {
	defer close(p.started)
	s.failStart(p, errLinuxOnly)
}

func (p *process) signalGroup(syscall.Signal) (bool, error) { return false, nil }

func killLeftovers(map[string]bool) int { return 0 }
