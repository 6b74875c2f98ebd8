package tunnelwire

import (
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// canSplice reports whether bytes can move from one connection to the
// other with splice(2): both are TCP sockets (not TLS, not wrapped).
func canSplice(from, to net.Conn) bool {
	_, a := from.(*net.TCPConn)
	_, b := to.(*net.TCPConn)
	return a && b
}

// pipe is the kernel buffer a splice goes through: socket → pipe → socket
// moves page references, not bytes.
type pipe struct {
	r, w int
	size int // capacity: at most this much per fill
}

func newPipe() (*pipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &pipe{r: fds[0], w: fds[1], size: 64 << 10}
	// 1 MiB is the default /proc/sys/fs/pipe-max-size; below it, keep 64 KiB.
	if n, err := unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, BufferSize); err == nil {
		p.size = n
	}
	return p, nil
}

func (p *pipe) close() {
	_ = unix.Close(p.r)
	_ = unix.Close(p.w)
}

const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// fill splices what src holds, up to max bytes (and the pipe's capacity),
// into the empty pipe, waiting for src to be readable (its read deadline
// applies). It returns io.EOF at src's end of stream.
func (p *pipe) fill(src net.Conn, max int) (int, error) {
	rc, err := src.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err
	}
	max = min(max, p.size)
	var n int64
	var serr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, serr = unix.Splice(int(fd), nil, p.w, nil, max, spliceFlags)
			if serr != unix.EINTR {
				return serr != unix.EAGAIN // EAGAIN: src is empty (the pipe is not full), wait
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case serr != nil:
		return 0, os.NewSyscallError("splice", serr)
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// drainFramed writes header (if any) and then the n bytes the pipe holds
// to dst, waiting while dst's send buffer is full (its write deadline
// applies). The header goes with MSG_MORE, so it leaves in one segment
// with the start of the payload.
func (p *pipe) drainFramed(dst net.Conn, header []byte, n int) error {
	rc, err := dst.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		for len(header) > 0 {
			m, e := unix.SendmsgN(int(fd), header, nil, nil, unix.MSG_NOSIGNAL)
			switch e {
			case nil:
				header = header[m:]
				continue
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			serr = os.NewSyscallError("sendmsg", e)
			return true
		}
		for n > 0 {
			m, e := unix.Splice(p.r, nil, int(fd), nil, n, spliceFlags)
			switch e {
			case nil:
				n -= int(m)
				continue
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			serr = os.NewSyscallError("splice", e)
			return true
		}
		return true
	})
	if err != nil {
		return err
	}
	return serr
}
