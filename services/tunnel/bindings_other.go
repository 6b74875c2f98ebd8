//go:build !linux

package tunnel

import "errors"

// listeningSockets needs Linux's /proc/net/tcp.
func listeningSockets() ([]listener, error) {
	return nil, errors.New("port discovery needs Linux /proc/net/tcp")
}

func socketOwners([]uint64) map[uint64]owner { return nil }
