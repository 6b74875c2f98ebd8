package egress

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// soOriginalDst is SO_ORIGINAL_DST (and IP6T_SO_ORIGINAL_DST): the
// destination a redirected connection had before the rules sent it to
// the forwarder.
const soOriginalDst = 80

// originalDst reads a redirected connection's original destination from
// conntrack.
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	local := c.LocalAddr().(*net.TCPAddr)
	var out netip.AddrPort
	var serr error
	err = rc.Control(func(fd uintptr) {
		if local.IP.To4() != nil {
			var sa unix.RawSockaddrInet4
			l := uint32(unsafe.Sizeof(sa))
			serr = getsockopt(int(fd), unix.SOL_IP, soOriginalDst, unsafe.Pointer(&sa), &l)
			if serr == nil {
				out = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:]))
			}
			return
		}
		var sa unix.RawSockaddrInet6
		l := uint32(unsafe.Sizeof(sa))
		serr = getsockopt(int(fd), unix.SOL_IPV6, soOriginalDst, unsafe.Pointer(&sa), &l)
		if serr == nil {
			out = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:]))
		}
	})
	if err != nil {
		return netip.AddrPort{}, err
	}
	if serr != nil {
		return netip.AddrPort{}, fmt.Errorf("SO_ORIGINAL_DST: %w", serr)
	}
	return out, nil
}

func getsockopt(fd, level, name int, val unsafe.Pointer, l *uint32) error {
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name), uintptr(val), uintptr(unsafe.Pointer(l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// markControl sets SO_MARK on the agent's own sockets.
func markControl(mark uint32) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(mark))
		})
		if err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("set SO_MARK: %w", serr)
		}
		return nil
	}
}

// notEnforceable says why rules cannot be put in place, "" when they can.
func notEnforceable() string {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return "cannot read the agent's capabilities: " + err.Error()
	}
	if data[unix.CAP_NET_ADMIN/32].Effective&(1<<(unix.CAP_NET_ADMIN%32)) == 0 {
		return "the agent lacks CAP_NET_ADMIN in the container's network namespace (run the container with --cap-add NET_ADMIN)"
	}
	if err := probeNetlink(); err != nil {
		return "nftables is not usable in the container's network namespace: " + err.Error()
	}
	return ""
}

// DropRawNet takes CAP_NET_RAW from the agent for good: out of every
// thread's bounding, ambient, inheritable, permitted and effective sets,
// so no program the agent starts, root's included, can get it back (not
// through file capabilities either). A holder of CAP_NET_RAW gets around
// any nftables egress rule: a packet socket (AF_PACKET) sends frames
// below the IP layer where the rules apply, and it may set the mark of
// the agent's sockets. The agent needs it for nothing (CAP_NET_ADMIN sets
// its mark).
func DropRawNet() error {
	const capNetRaw = unix.CAP_NET_RAW
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, capNetRaw, 0); e != 0 {
		if e == unix.EINVAL {
			return nil // the kernel knows no such capability
		}
		return fmt.Errorf("drop CAP_NET_RAW from the bounding set: %w", e)
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, capNetRaw); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("drop CAP_NET_RAW from the ambient set: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	bit := uint32(1) << (capNetRaw % 32)
	d := &data[capNetRaw/32]
	d.Effective &^= bit
	d.Permitted &^= bit
	d.Inheritable &^= bit
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("drop CAP_NET_RAW: %w", e)
	}
	return nil
}
