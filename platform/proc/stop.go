package proc

import (
	"os"
	"syscall"
	"time"
)

// StopTree stops the process tree led by pid: sig to its process group and
// every descendant, SIGKILL to all of them after grace if the leader has
// not exited, and SIGKILL to whatever is left once it has (children that
// ignored sig, grandchildren that left the group). exited delivers the
// leader's end; StopTree answers it.
func StopTree[T any](pid int, sig syscall.Signal, grace time.Duration, exited <-chan T) T {
	desc := Descendants(pid)
	KillTree(pid, sig)
	var r T
	select {
	case r = <-exited:
	case <-time.After(grace):
		KillTree(pid, syscall.SIGKILL)
		r = <-exited
	}
	_ = KillGroup(pid, syscall.SIGKILL)
	for _, d := range desc {
		_ = syscall.Kill(d, syscall.SIGKILL)
	}
	return r
}

// ExitStatus is a finished process's exit code, 128+N when signal N
// killed it (as shells report it) with the signal's name, or -1 without a
// state.
func ExitStatus(ps *os.ProcessState) (code int, signal string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}
