package procnet

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel's sock_diag interface (linux/inet_diag.h) answers for one
// socket by its addresses and ports: an exact lookup, where
// /proc/net/tcp formats every socket of the namespace (milliseconds on a
// busy machine; see BENCHMARKS.md). Owner uses it and falls back to the
// table when netlink is unavailable.
const (
	diagReqLen   = 56 // struct inet_diag_req_v2
	diagMsgLen   = 72 // struct inet_diag_msg
	diagNoCookie = ^uint32(0)
	diagAllState = ^uint32(0)
)

var errNoNetlink = errors.New("procnet: sock_diag unavailable")

// ownerDiag asks sock_diag for the TCP socket whose own address is local
// and whose peer is remote.
func ownerDiag(local, remote netip.AddrPort) (uid uint32, ok bool, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, false, errNoNetlink
	}
	defer unix.Close(fd)
	family := byte(unix.AF_INET)
	if local.Addr().Is6() {
		family = unix.AF_INET6
	}
	req := make([]byte, unix.NLMSG_HDRLEN+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence
	r := req[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], diagAllState)
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	la, ra := local.Addr().AsSlice(), remote.Addr().AsSlice()
	copy(id[4:20], la)
	copy(id[20:36], ra)
	ne.PutUint32(id[40:], diagNoCookie)
	ne.PutUint32(id[44:], diagNoCookie)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false, errNoNetlink
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, false, os.NewSyscallError("recvfrom", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return 0, false, errors.New("procnet: unreadable sock_diag answer")
	}
	m := msgs[0]
	switch m.Header.Type {
	case unix.NLMSG_ERROR:
		if len(m.Data) >= 4 {
			if errno := -int32(ne.Uint32(m.Data)); errno == int32(unix.ENOENT) {
				return 0, false, nil // no such socket: it closed
			}
		}
		return 0, false, errNoNetlink
	case unix.SOCK_DIAG_BY_FAMILY:
	default:
		return 0, false, errors.New("procnet: unexpected sock_diag answer")
	}
	if len(m.Data) < diagMsgLen {
		return 0, false, errors.New("procnet: short sock_diag answer")
	}
	state, uid, inode := m.Data[1], ne.Uint32(m.Data[64:]), ne.Uint32(m.Data[68:])
	if inode == 0 || state == StateTimeWait || state == StateListen {
		return 0, false, nil // no process holds it any more: no owner
	}
	return uid, true, nil
}
