package procnet

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// TCP states as the kernel numbers them (include/net/tcp_states.h).
const (
	StateEstablished = 0x01
	StateTimeWait    = 0x06
	StateListen      = 0x0A
)

// Socket is one row of /proc/net/tcp{,6}.
type Socket struct {
	// Local and Remote are the socket's own address and its peer's
	// (IPv4-mapped IPv6 addresses read as IPv4).
	Local, Remote netip.AddrPort
	State         uint8
	// UID is the socket's owner: the user whose process created it. A
	// socket no process holds any more (closed, TIME_WAIT) has Inode 0
	// and the kernel reports uid 0 for it: such a row names no owner.
	UID   uint32
	Inode uint64
}

// ErrUnsupported: this system has no /proc/net/tcp.
var ErrUnsupported = errors.New("procnet: the TCP socket table needs Linux /proc/net/tcp")

// ParseAddr reads "0100007F:0016": the address as the kernel stores it
// (32-bit words in host byte order, little-endian here) and the port in
// hex. An IPv4-mapped IPv6 address reads as IPv4.
func ParseAddr(s string) (netip.AddrPort, error) {
	h, p, ok := bytes.Cut([]byte(s), []byte(":"))
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("malformed port in %q", s)
	}
	raw := make([]byte, hex.DecodedLen(len(h)))
	if _, err := hex.Decode(raw, h); err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
