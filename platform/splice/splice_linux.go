package splice

import (
	"errors"
	"io"
	"net"

	"golang.org/x/sys/unix"
)

// spliceChunk is the most one splice(2) moves, and the pipe's size.
const spliceChunk = 1 << 20

// Copy moves src's bytes to dst until src's end (nil at a clean end, as
// io.Copy). Between two TCP sockets the bytes go through a pipe of its own
// with splice(2) and never enter the process; other connections are copied
// through a pooled buffer.
func Copy(dst, src net.Conn) (int64, error) { return spliceCopy(dst, src, -1) }

// CopyN moves exactly n of src's bytes to dst, as Copy does (io.EOF when
// src ends first, as io.CopyN).
func CopyN(dst, src net.Conn, n int64) (int64, error) {
	w, err := spliceCopy(dst, src, n)
	if err == nil && w < n {
		err = io.EOF
	}
	return w, err
}

// spliceCopy copies until src's end, or n bytes when n >= 0.
func spliceCopy(dst, src net.Conn, n int64) (int64, error) {
	d, okd := dst.(*net.TCPConn)
	s, oks := src.(*net.TCPConn)
	fallback := func() (int64, error) {
		if n < 0 {
			return bufCopy(dst, src)
		}
		return bufCopyN(dst, src, n)
	}
	if !okd || !oks {
		return fallback()
	}
	rs, err := s.SyscallConn()
	if err != nil {
		return fallback()
	}
	rd, err := d.SyscallConn()
	if err != nil {
		return fallback()
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fallback()
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	// A refusal (an unprivileged user's pipe limit) leaves 64 KiB.
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, spliceChunk)
	var total int64
	for n < 0 || total < n {
		chunk := spliceChunk
		if n >= 0 && n-total < int64(chunk) {
			chunk = int(n - total)
		}
		var got int
		var serr error
		if err := rs.Read(func(fd uintptr) bool {
			got, serr = rawSplice(int(fd), p[1], chunk)
			return !errors.Is(serr, unix.EAGAIN)
		}); err != nil {
			return total, err
		}
		if serr != nil {
			return total, serr
		}
		if got == 0 {
			return total, nil // src's end
		}
		for left := got; left > 0; {
			var m int
			if err := rd.Write(func(fd uintptr) bool {
				m, serr = rawSplice(p[0], int(fd), left)
				return !errors.Is(serr, unix.EAGAIN)
			}); err != nil {
				return total, err
			}
			if serr != nil {
				return total, serr
			}
			left -= m
			total += int64(m)
		}
	}
	return total, nil
}

// rawSplice is one non-blocking splice(2), retried when interrupted.
func rawSplice(in, out, n int) (int, error) {
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		}
		return 0, e
	}
}
