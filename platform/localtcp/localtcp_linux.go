package localtcp

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unpaced is the controller a local connection gets: always built in and
// always permitted to unprivileged processes.
const unpaced = "reno"

// Tune sets c's congestion control to reno when c is a TCP connection
// within this host (Local) and reports whether it did. Anything else, or
// a kernel that refuses, is left as it is: the tuning only saves CPU.
func Tune(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok || !Local(c.LocalAddr(), c.RemoteAddr()) {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, unpaced)
	}); err != nil {
		return false
	}
	return serr == nil
}
