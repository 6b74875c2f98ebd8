//go:build !linux

package agent

import "context"

// sshKeySync keeps SSH keys on Linux only (the containers' system).
type sshKeySync struct{}

func (s *Supervisor) newSSHKeySync() *sshKeySync { return nil }

func (k *sshKeySync) run(context.Context) {}
