package terminal

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"deckhand/platform"
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
			return "", platform.Invalid("shell", "%s was not found in PATH", shell)
		}
		path = p
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", platform.Invalid("shell", "%s does not exist", shell)
	case st.IsDir():
		return "", platform.Invalid("shell", "%s is a directory", shell)
	case st.Mode()&0o111 == 0:
		return "", platform.Invalid("shell", "%s is not executable", shell)
	}
	return path, nil
}

// startShell runs shell as a session leader on a new PTY. The master is
// re-opened non-blocking so reads park in the runtime poller (no thread per
// idle session) and Close/SetReadDeadline can interrupt them; creack/pty's
// helpers call Fd(), which would put it in blocking mode.
func startShell(shell, cwd string, env []string, cols, rows int) (*os.File, *exec.Cmd, error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, nil, platform.Internal("open a pseudo-terminal", err)
	}
	defer tty.Close()
	fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	_ = master.Close()
	if err != nil {
		return nil, nil, platform.Internal("open a pseudo-terminal", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, nil, platform.Internal("open a pseudo-terminal", err)
	}
	ptmx := os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := pty.Setsize(tty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		_ = ptmx.Close()
		return nil, nil, platform.Internal("size the pseudo-terminal", err)
	}
	cmd := &exec.Cmd{
		Path:   shell,
		Args:   []string{shell},
		Dir:    cwd,
		Env:    env,
		Stdin:  tty,
		Stdout: tty,
		Stderr: tty,
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:  true,
			Setctty: true,
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
	return &platform.Error{Code: CodeShellStart, Field: "shell", Details: "shell",
		Message: "shell: " + shell + ": " + reason, Cause: err}
}

// setSize sets the window size without Fd(), which would make the master
// blocking.
func setSize(f *os.File, cols, rows int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
	if err != nil {
		return err
	}
	return ioErr
}

// signalGroup signals the shell's process group (it is a session leader, so
// its group id is its pid) and the shell itself.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
}

// exitCode follows the shell convention: 128+N for death by signal N.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
