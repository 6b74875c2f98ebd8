package agent

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// InitChildEnv marks the agent that a PID 1 deckhand started under itself.
const InitChildEnv = "DECKHAND_INIT_CHILD"

// NeedsInit reports whether this process is PID 1 of its PID namespace (a
// container started without an init) and so must first become one.
func NeedsInit() bool {
	return os.Getpid() == 1 && os.Getenv(InitChildEnv) == ""
}

// RunInit makes PID 1 a minimal init: it starts the same deckhand command as
// its only child, forwards termination signals to it, reaps every process
// that exits in the container (orphans of shells and programs are re-parented
// to PID 1 and would stay zombies), and exits with the agent's status.
// The agent itself cannot do the reaping: its children are waited for by
// os/exec in several packages, and a blanket wait would steal their exit
// statuses.
func RunInit() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "deckhand: init:", err)
		return 1
	}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), InitChildEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "deckhand: init: start agent:", err)
		return 1
	}
	agentPID := cmd.Process.Pid
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			_ = syscall.Kill(agentPID, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
			if pid == agentPID {
				// Leaving PID 1 ends the namespace: the kernel kills
				// whatever is left.
				if ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ws.ExitStatus()
			}
		}
	}
	return 1
}
