package proxy

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// alive says whether an idle connection is still open at the agent's end:
// a peek that would block means open; an end of stream (the agent closed
// it while idle) or bytes nobody asked for mean it is not to be reused.
func alive(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = n < 0 && err == unix.EAGAIN
		return true
	}); err != nil {
		return false
	}
	return open
}
