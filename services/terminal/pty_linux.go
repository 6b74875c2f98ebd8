package terminal

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"deckhand/platform/fault"
	"deckhand/platform/proc"
)

const (
	sigHangup = syscall.SIGHUP
	sigKill   = syscall.SIGKILL
)

// resolveShell finds the shell and says why it cannot run before a PTY is
// spent on it.
func resolveShell(shell string) (string, error) {
	path := shell
	if !filepath.IsAbs(shell) {
		p, err := exec.LookPath(shell)
		if err != nil {
			return "", fault.Invalid("shell", "%s was not found in PATH", shell)
		}
		path = p
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fault.Invalid("shell", "%s does not exist", shell)
	case st.IsDir():
		return "", fault.Invalid("shell", "%s is a directory", shell)
	case st.Mode()&0o111 == 0:
		return "", fault.Invalid("shell", "%s is not executable", shell)
	}
	return path, nil
}

// startShell runs shell as a session leader on a new PTY (proc.OpenPTY:
// a non-blocking master), as cred's user (nil: the service's own).
func startShell(shell, cwd string, env []string, cred *syscall.Credential, cols, rows int) (*os.File, *exec.Cmd, error) {
	ptmx, tty, err := proc.OpenPTY(cols, rows)
	if err != nil {
		return nil, nil, fault.Internal("open a pseudo-terminal", err)
	}
	defer tty.Close()
	cmd := &exec.Cmd{
		Path:   shell,
		Args:   []string{shell},
		Dir:    cwd,
		Env:    env,
		Stdin:  tty,
		Stdout: tty,
		Stderr: tty,
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:     true,
			Setctty:    true,
			Credential: cred,
		},
	}
	if err := cmd.Start(); err != nil {
		_ = ptmx.Close()
		return nil, nil, shellStartError(shell, err)
	}
	return ptmx, cmd, nil
}

func shellStartError(shell string, err error) error {
	reason := "it could not be started"
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrPermission):
		reason = "permission denied"
	case errors.Is(err, fs.ErrNotExist):
		reason = "it or its interpreter does not exist"
	case errors.As(err, &errno) && errno == syscall.ENOEXEC:
		reason = "it is not an executable the system can run"
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		reason = "a path component is not a directory"
	}
	return &fault.Error{Code: CodeShellStart, Field: "shell", Details: "shell",
		Message: "shell: " + shell + ": " + reason, Cause: err}
}

// setSize sets the window size without Fd(), which would make the master
// blocking.
func setSize(f *os.File, cols, rows int) error { return proc.SetWinsize(f, cols, rows) }

// signalGroup signals the shell's process group (it is a session leader, so
// its group id is its pid) and the shell itself. Not proc.StopTree: as
// when a terminal closes, a job the user moved out of the session's reach
// (nohup, disown) outlives it.
func signalGroup(pid int, sig syscall.Signal) {
	_ = proc.KillGroup(pid, sig)
	_ = syscall.Kill(pid, sig)
}
