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
		var n uintptr
		var e unix.Errno
		err := rc.Read(func(fd uintptr) bool {
			var done bool
			n, e, done = rawCall(unix.SYS_READ, fd, unsafe.Pointer(&p[0]), len(p))
			return done
		})
		switch {
		case err != nil:
			return 0, err
		case e != 0:
			return 0, &os.PathError{Op: "read", Path: f.Name(), Err: e}
		case n == 0:
			return 0, io.EOF
		}
		return int(n), nil
	}
}

// rawCall makes a read-like system call on a non-blocking descriptor for
// RawConn's Read or Write: again on EINTR; not done on EAGAIN (the poller
// waits), else done with its result.
func rawCall(trap, fd uintptr, p unsafe.Pointer, n int) (r uintptr, e unix.Errno, done bool) {
	for {
		r, _, e = unix.RawSyscall(trap, fd, uintptr(p), uintptr(n))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, 0, false
		}
		return r, e, true
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
			var r uintptr
			var e unix.Errno
			err := rc.Write(func(fd uintptr) bool {
				var done bool
				r, e, done = rawCall(unix.SYS_WRITEV, fd, unsafe.Pointer(&iov[0]), k)
				return done
			})
			if err != nil {
				return err
			}
			if e != 0 {
				return &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("writev", e)}
			}
			// Drop what was written; empty buffers left in front are
			// skipped by the next iovec.
			n := int(r)
			for n > 0 && len(bufs) > 0 {
				if len(bufs[0]) <= n {
					n -= len(bufs[0])
					bufs = bufs[1:]
					continue
				}
				bufs[0] = bufs[0][n:]
				n = 0
			}
		}
		return nil
	}
}
