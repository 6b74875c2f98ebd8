//go:build !linux

package localtcp

import "net"

// Tune changes nothing where congestion control cannot be set per socket.
func Tune(net.Conn) bool { return false }
