//go:build !linux

package agent

import "context"

// sshd runs an SSH server on Linux only (the containers' system).
type sshd struct{}

func (s *Supervisor) newSSHD() *sshd { return nil }

func (d *sshd) run(context.Context) {}
