package process

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The bulk path's reads of a process's pipe and writes to a follower's
// socket are raw system calls on non-blocking descriptors: none waits
// (the poller does), so the runtime need not treat them as calls that may
// block. A megabyte's read or write takes long enough that it otherwise
// hands this goroutine's P to another thread at each call, with sysmon
// waking to do it.

// rawReader answers a reader of f: raw reads when f is non-blocking (a
// pipe of os.Pipe), else f's own Read (a blocking read must not be raw).
// Deadlines set on f hold either way.
func rawReader(f *os.File) func([]byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Read
	}
	nonblock := false
	_ = rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && fl&unix.O_NONBLOCK != 0
	})
	if !nonblock {
		return f.Read
	}
	return func(p []byte) (int, error) {
		if len(p) == 0 {
			return 0, nil
		}
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			for {
				r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
				switch e {
				case 0:
					n, rerr = int(r), nil
				case unix.EINTR:
					continue
				case unix.EAGAIN:
					return false
				default:
					n, rerr = 0, &os.PathError{Op: "read", Path: f.Name(), Err: e}
				}
				return true
			}
		})
		switch {
		case err != nil:
			return 0, err
		case rerr != nil:
			return 0, rerr
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// rawWritev answers a writer of whole buffers to c with raw writev(2)
// when c gives its socket's descriptor (a TCP connection, or a wrapper of
// one that passes SyscallConn through, as the agent's gateway does for the
// connections it hands over), else nil: a TLS connection has no descriptor
// to write plain bytes to.
func rawWritev(c net.Conn) func(bufs [][]byte) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(bufs [][]byte) error {
		var iov [8]unix.Iovec
		for len(bufs) > 0 {
			k := 0
			for _, b := range bufs {
				if k == len(iov) {
					break
				}
				if len(b) > 0 {
					iov[k].Base = &b[0]
					iov[k].SetLen(len(b))
					k++
				}
			}
			if k == 0 {
				return nil
			}
			var n int
			var werr error
			err := rc.Write(func(fd uintptr) bool {
				for {
					r, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
					switch e {
					case 0:
						n = int(r)
					case unix.EINTR:
						continue
					case unix.EAGAIN:
						return false
					default:
						werr = e
					}
					return true
				}
			})
			if err != nil {
				return err
			}
			if werr != nil {
				return &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("writev", werr)}
			}
			// Drop what was written.
			for n > 0 && len(bufs) > 0 {
				if len(bufs[0]) <= n {
					n -= len(bufs[0])
					bufs = bufs[1:]
					continue
				}
				bufs[0] = bufs[0][n:]
				n = 0
			}
			for len(bufs) > 0 && len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
		return nil
	}
}
