package proc

import (
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// OpenPTY opens a pseudo-terminal of cols x rows. The master is re-opened
// non-blocking, so reads park in the runtime poller (no thread per idle
// terminal) and Close or SetReadDeadline interrupt them; creack/pty's
// helpers call Fd(), which would put it back in blocking mode, so resize it
// with SetWinsize. The caller closes tty once the child has it.
func OpenPTY(cols, rows int) (master, tty *os.File, err error) {
	m, t, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	_ = m.Close()
	if err != nil {
		_ = t.Close()
		return nil, nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		_ = t.Close()
		return nil, nil, err
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := pty.Setsize(t, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		_ = master.Close()
		_ = t.Close()
		return nil, nil, err
	}
	return master, t, nil
}

// SetWinsize sets a terminal's window size through f (a master from
// OpenPTY) without Fd(), which would make it blocking.
func SetWinsize(f *os.File, cols, rows int) error {
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
