//go:build !linux

package egress

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
)

// TableName is the agent's nftables table on Linux.
const TableName = "deckhand_egress"

type ruleSpec struct {
	mark, uid        uint32
	dnsPort, fwdPort uint16
	redirectTCP, v6  bool
	exempt           []netip.AddrPort
}

var errLinuxOnly = errors.New("egress rules need Linux nftables")

func originalDst(*net.TCPConn) (netip.AddrPort, error) { return netip.AddrPort{}, errLinuxOnly }
func installRules(ruleSpec) error                      { return errLinuxOnly }
func removeRules() error                               { return nil }
func rulesPresent() (bool, uint64, error)              { return false, 0, nil }
func markControl(uint32) func(string, string, syscall.RawConn) error {
	return nil
}
func notEnforceable() string {
	return "egress rules need Linux nftables; this agent runs on another system"
}

// DropRawNet has nothing to drop outside Linux.
func DropRawNet() error { return nil }
