//go:build unix && !linux

package agent

import "syscall"

// childAttr puts a child in its own process group so stopping it reaches
// everything it started.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
