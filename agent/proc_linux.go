package agent

import "syscall"

// childAttr puts a child in its own process group, so stopping it reaches
// everything it started, and asks the kernel to SIGKILL it if the agent dies
// without stopping it (no orphans even on `kill -9` of the agent). Pdeathsig
// fires when the spawning thread exits, so child units lock their goroutine
// to its thread for their whole life.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
