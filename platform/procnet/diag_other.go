//go:build !linux

package procnet

import (
	"errors"
	"net/netip"
)

var errNoNetlink = errors.New("procnet: sock_diag unavailable")

func ownerDiag(netip.AddrPort, netip.AddrPort) (uint32, bool, error) { return 0, false, errNoNetlink }
